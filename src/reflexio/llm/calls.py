"""The seam itself: what a call is, what comes back, how it fails, and how it is accounted.

Everything learning code touches lives here; the LiteLLM adapter (``reflexio.llm.adapter``)
and the model-per-role routing (``reflexio.llm.routing``) are behind it.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from reflexio import telemetry
from reflexio.errors import ServiceUnavailableError

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

#: A chat message: ``{"role": "system" | "user" | "assistant", "content": ...}``.
Message = Mapping[str, str]


class Role(StrEnum):
    """What a call is for; each role gets its own model (see ``resolve_llm``)."""

    GATE = "gate"
    EXTRACTION = "extraction"
    EVALUATION = "evaluation"
    QUERY_REWRITE = "query_rewrite"


@dataclass(frozen=True, slots=True)
class LLMCall(Generic[M]):
    """One request to a model.

    Attributes:
        role: Which model serves it.
        prompt: Prompt name (``reflexio.learn.prompts``), for accounting and scripted models.
        version: Prompt version.
        messages: The rendered chat messages.
        output: The pydantic model the answer must validate against; None for free text.
        inputs: What the prompt was rendered from: its variables and the domain objects behind
            them. Scripted models choose and build responses from these; adapters ignore them.
        timeout_s: Per-attempt timeout; None means the model's default.
        max_tokens: Cap on the answer's length; None means the provider's default.
    """

    role: Role
    prompt: str
    version: str
    messages: tuple[Message, ...]
    output: type[M] | None = None
    inputs: Mapping[str, Any] = field(default_factory=dict)
    timeout_s: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """What a call consumed, summed over its attempts (retries and the repair included)."""

    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_ms: float = 0.0
    attempts: int = 0

    def plus(self, other: Usage) -> Usage:
        """Usage of two consecutive requests of the same call."""
        return Usage(
            model=other.model or self.model,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            latency_ms=self.latency_ms + other.latency_ms,
            attempts=self.attempts + other.attempts,
        )


@dataclass(frozen=True, slots=True)
class LLMResult(Generic[M]):
    """A model's answer: the raw text, the validated output (when asked for) and the usage."""

    text: str
    output: M | None
    usage: Usage

    @property
    def value(self) -> M:
        """The validated output; raises ``LLMOutputError`` for a free-text call."""
        if self.output is None:
            raise LLMOutputError("this call asked for no structured output", usage=self.usage)
        return self.output


class LLMError(ServiceUnavailableError):
    """An LLM call failed; ``usage`` holds what the failed attempts consumed."""

    code = "llm_error"

    def __init__(self, message: str, *, usage: Usage | None = None, details: dict[str, Any] | None = None):
        super().__init__(message, details=details)
        self.usage = usage


class LLMUnavailableError(LLMError):
    """Rate limits, timeouts or server errors outlasted the retries; trying later may work."""

    code = "llm_unavailable"


class LLMRejectedError(LLMError):
    """The provider refused the request (bad key, bad request); retrying cannot help."""

    code = "llm_rejected"


class LLMOutputError(LLMError):
    """The answer did not fit the output model, even after one repair attempt."""

    code = "llm_invalid_output"


class LLM(Protocol):
    """Anything that answers an ``LLMCall``."""

    def complete(self, call: LLMCall[M]) -> LLMResult[M]:
        """Answer one call.

        Raises:
            LLMError: The call failed (its subclasses say whether retrying later can help).
        """
        ...


# -- structured output -------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_output(text: str, output: type[M]) -> M:
    """Validate a model's answer against ``output``, tolerating a code fence or prose around it.

    Raises:
        ValueError: The answer holds no valid JSON object of that shape (pydantic's
            ``ValidationError`` is a ``ValueError``).
    """
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise ValueError("the answer contains no JSON object")
    return output.model_validate_json(body[start : end + 1])


def schema_instruction(output: type[BaseModel]) -> str:
    """The sentence that tells a text model the exact JSON shape to answer with."""
    schema = json.dumps(output.model_json_schema(), separators=(",", ":"))
    return (
        "Answer with a single JSON object and nothing else. It must validate against this "
        f"JSON Schema:\n{schema}"
    )


def with_schema(call: LLMCall[Any]) -> list[dict[str, str]]:
    messages = [dict(m) for m in call.messages]
    if call.output is None:
        return messages
    instruction = schema_instruction(call.output)
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = f"{messages[0]['content']}\n\n{instruction}"
    else:
        messages.insert(0, {"role": "system", "content": instruction})
    return messages


def repair_messages(messages: list[dict[str, str]], answer: str, error: Exception) -> list[dict[str, str]]:
    problem = str(error)[:2000]
    return [
        *messages,
        {"role": "assistant", "content": answer},
        {
            "role": "user",
            "content": "Your answer could not be used: "
            f"{problem}\nReply again with only the corrected JSON object.",
        },
    ]


def with_latency(usage: Usage, started: float) -> Usage:
    return replace(usage, latency_ms=(time.perf_counter() - started) * 1000.0)


# -- accounting --------------------------------------------------------------------------------


class UsageLedger(Protocol):
    """Where finished calls are reported (``reflexio.learn.usage.StorageLedger`` stores them)."""

    def record(self, call: LLMCall[Any], usage: Usage, error: str | None) -> None:
        """Account one call; ``error`` is set when it failed."""
        ...


@dataclass(frozen=True, slots=True)
class Metered:
    """An ``LLM`` that reports every call it forwards, failed ones included, to a ledger.

    Latency is the wall time the caller waited (retries and backoff included).
    """

    llm: LLM
    ledger: UsageLedger

    def complete(self, call: LLMCall[M]) -> LLMResult[M]:
        """Forward ``call`` and account it (and trace it: one span per logical call)."""
        started = time.perf_counter()
        with telemetry.span(
            f"reflexio.llm {call.role.value}",
            **{"gen_ai.operation.name": "chat", "reflexio.prompt": call.prompt},
        ) as current:
            try:
                result = self.llm.complete(call)
            except Exception as exc:  # accounted whatever it was, then re-raised unchanged
                usage = exc.usage if isinstance(exc, LLMError) and exc.usage else Usage()
                self.ledger.record(call, with_latency(usage, started), f"{type(exc).__name__}: {exc}"[:1000])
                raise
            usage = with_latency(result.usage, started)
            current.set_attributes(
                {
                    "gen_ai.request.model": usage.model,
                    "gen_ai.usage.input_tokens": usage.prompt_tokens,
                    "gen_ai.usage.output_tokens": usage.completion_tokens,
                    "reflexio.llm.cost_usd": usage.cost_usd,
                }
            )
            self.ledger.record(call, usage, None)
        return result
