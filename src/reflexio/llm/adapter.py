"""``LLM`` over LiteLLM, imported lazily (it takes seconds to import and is optional).

Retries transient failures (rate limits, timeouts, 5xx, connection errors) with exponential
backoff and jitter; validates structured output with one repair round; reports token, cost
and latency of every attempt in the result's ``Usage``.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from reflexio.config import Settings, load_litellm
from reflexio.llm.calls import (
    LLMCall,
    LLMError,
    LLMOutputError,
    LLMRejectedError,
    LLMResult,
    LLMUnavailableError,
    Usage,
    parse_output,
    repair_messages,
    with_latency,
    with_schema,
)
from reflexio.llm.routing import ModelRoles, ModelSpec, resolve_llm
from reflexio.models.org_config import Config

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often and how patiently transient failures are retried.

    Attributes:
        attempts: Requests per call at most (1 = no retry).
        base_s: First backoff; it doubles per retry and is multiplied by a random factor in [0.5, 1.5).
        max_s: Longest single backoff.
    """

    attempts: int = 4
    base_s: float = 1.0
    max_s: float = 30.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait after ``attempt`` failed requests."""
        return min(self.max_s, self.base_s * 2.0 ** max(0, attempt - 1)) * (0.5 + rng.random())


class LiteLLMModel:
    """``LLM`` over LiteLLM: any provider, including local OpenAI-compatible servers.

    Args:
        roles: The model serving each role.
        retry: Backoff for rate limits, timeouts, server and connection errors.
        completion: The completion function (default ``litellm.completion``).
        sleep: How to wait between retries.
        rng: Jitter source.
    """

    def __init__(
        self,
        roles: ModelRoles,
        *,
        retry: RetryPolicy | None = None,
        completion: Callable[..., Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.roles = roles
        self.retry = retry or RetryPolicy()
        self._completion = completion
        self._sleep = sleep
        self._rng = rng or random.Random()

    def complete(self, call: LLMCall[M]) -> LLMResult[M]:
        """Answer ``call`` with its role's model; see the module docstring for the policy."""
        spec = self.roles.for_role(call.role)
        messages = with_schema(call)
        started = time.perf_counter()
        text, usage = self._send(spec, call, messages)
        if call.output is None:
            return LLMResult(text, None, with_latency(usage, started))
        try:
            return LLMResult(text, parse_output(text, call.output), with_latency(usage, started))
        except ValueError as first:
            log.info("%s answer to %s did not validate, repairing: %s", spec.model, call.prompt, first)
            fixed, usage = self._repair(spec, call, repair_messages(messages, text, first), usage)
        try:
            return LLMResult(fixed, parse_output(fixed, call.output), with_latency(usage, started))
        except ValueError as second:
            raise LLMOutputError(
                f"{spec.model} gave no valid {call.output.__name__} for {call.prompt}: {second}",
                usage=with_latency(usage, started),
            ) from second

    def _repair(
        self, spec: ModelSpec, call: LLMCall[Any], messages: list[dict[str, str]], spent: Usage
    ) -> tuple[str, Usage]:
        """The repair request; its failure still reports what the first answer cost."""
        try:
            fixed, more = self._send(spec, call, messages)
        except LLMError as exc:
            exc.usage = spent.plus(exc.usage or Usage())
            raise
        return fixed, spent.plus(more)

    def _send(self, spec: ModelSpec, call: LLMCall[Any], messages: list[dict[str, str]]) -> tuple[str, Usage]:
        """One request, retried on transient failures."""
        litellm = load_litellm()
        completion = self._completion or litellm.completion
        kwargs = spec.kwargs()
        kwargs.update(
            messages=messages, timeout=call.timeout_s or spec.timeout_s, num_retries=0, drop_params=True
        )
        if call.max_tokens:
            kwargs["max_tokens"] = call.max_tokens
        if call.output is not None:
            kwargs["response_format"] = {"type": "json_object"}
        for attempt in range(1, self.retry.attempts + 1):
            try:
                response = completion(**kwargs)
            except Exception as exc:
                self._after_failure(exc, litellm, spec, attempt)
                continue
            return _text(response), _usage(response, spec.model, attempt, litellm)
        raise AssertionError("unreachable: the last attempt raises")  # pragma: no cover

    def _after_failure(self, exc: Exception, litellm: Any, spec: ModelSpec, attempt: int) -> None:
        transient = _transient(exc, litellm)
        failed = Usage(model=spec.model, attempts=attempt)
        error = f"{spec.model}: {type(exc).__name__}: {exc}"
        if transient is None:
            raise exc
        if not transient:
            raise LLMRejectedError(error, usage=failed) from exc
        if attempt >= self.retry.attempts:
            raise LLMUnavailableError(f"{error} (after {attempt} attempts)", usage=failed) from exc
        wait = self.retry.delay(attempt, self._rng)
        log.warning("%s; retrying in %.1f s (attempt %s of %s)", error, wait, attempt, self.retry.attempts)
        self._sleep(wait)


def _transient(exc: Exception, litellm: Any) -> bool | None:
    """True: retry; False: the provider refused; None: not a provider error (re-raise it)."""
    retry_types = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
        TimeoutError,
        ConnectionError,
    )
    if isinstance(exc, retry_types):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in (408, 429) or status >= 500
    if isinstance(exc, litellm.exceptions.OpenAIError):
        return False
    return None


def _text(response: Any) -> str:
    try:
        return str(response.choices[0].message.content or "")
    except (AttributeError, IndexError):
        return ""


def _usage(response: Any, model: str, attempts: int, litellm: Any) -> Usage:
    counted = getattr(response, "usage", None)
    cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
    if cost is None:
        try:
            cost = litellm.completion_cost(completion_response=response)
        except Exception:  # unknown or local models have no price
            cost = 0.0
    return Usage(
        model=model,
        prompt_tokens=int(getattr(counted, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(counted, "completion_tokens", 0) or 0),
        cost_usd=float(cost or 0.0),
        attempts=attempts,
    )


def open_llm(config: Config, settings: Settings, *, retry: RetryPolicy | None = None) -> LiteLLMModel | None:
    """The LiteLLM model an org's config and the server's keys describe, or None without any."""
    roles = resolve_llm(config, settings)
    return LiteLLMModel(roles, retry=retry) if roles is not None else None
