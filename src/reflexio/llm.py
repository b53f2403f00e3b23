"""The LLM seam: one narrow method, structured output, retries, and accounting.

Why it is shaped this way:

* **One method.** ``LLM.complete(call) -> result`` is all the learning code sees, so the
  LiteLLM adapter, the scripted model of ``reflexio.testing`` and anything else are
  interchangeable, and tests go through the same seam as production.
* **A call says what it wants, not which model.** An ``LLMCall`` names its *role* (gate,
  extraction, evaluation, query rewrite), its prompt and version, and the pydantic model its
  answer must fit. The adapter maps roles to models from the org's config (``resolve_llm``).
* **Output is validated, once repaired, then refused.** Free text is parsed as JSON and
  validated; on failure the validation error is sent back once; a second failure raises
  ``LLMOutputError`` rather than turning into "no result" (the original's W29).
* **Transient failures are retried, permanent ones are not.** Rate limits, timeouts, 5xx and
  connection errors back off exponentially with jitter; auth and bad-request errors raise at once.
* **Every call is accounted.** ``Metered`` reports tokens, cost and latency of each call,
  succeeded or failed, to a ``UsageLedger`` (``reflexio.learn.usage`` stores them per org and job).

LiteLLM is imported lazily: it takes seconds to import and is an optional dependency.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel

from reflexio.config import Settings
from reflexio.errors import ServiceUnavailableError
from reflexio.models.org_config import APIKeyConfig, Config, LLMConfig

__all__ = [
    "LLM",
    "LLMCall",
    "LLMError",
    "LLMOutputError",
    "LLMRejectedError",
    "LLMResult",
    "LLMUnavailableError",
    "LiteLLMModel",
    "Message",
    "Metered",
    "ModelRoles",
    "ModelSpec",
    "RetryPolicy",
    "Role",
    "Usage",
    "UsageLedger",
    "open_llm",
    "parse_output",
    "resolve_llm",
]

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


def _with_schema(call: LLMCall[Any]) -> list[dict[str, str]]:
    messages = [dict(m) for m in call.messages]
    if call.output is None:
        return messages
    instruction = schema_instruction(call.output)
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = f"{messages[0]['content']}\n\n{instruction}"
    else:
        messages.insert(0, {"role": "system", "content": instruction})
    return messages


def _repair_messages(messages: list[dict[str, str]], answer: str, error: Exception) -> list[dict[str, str]]:
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


# -- models per role ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One LiteLLM model and how to reach it.

    Attributes:
        model: LiteLLM model name with its provider prefix (``openai/gpt-5-mini``,
            ``ollama/llama3.2``, ``hosted_vllm/...``).
        api_key: Credential for the provider (never logged).
        api_base: Server URL, for local OpenAI-compatible servers and custom endpoints.
        api_version: For Azure.
        timeout_s: Default per-attempt timeout.
        extra: More keyword arguments for ``litellm.completion`` (headers, reasoning effort...).
    """

    model: str
    api_key: str | None = field(default=None, repr=False)
    api_base: str | None = None
    api_version: str | None = None
    timeout_s: float = 60.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``litellm.completion`` that this spec fixes."""
        out: dict[str, Any] = {"model": self.model, **self.extra}
        for name in ("api_key", "api_base", "api_version"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out


@dataclass(frozen=True, slots=True)
class ModelRoles:
    """The model serving each ``Role`` (field names are the role values)."""

    gate: ModelSpec
    extraction: ModelSpec
    evaluation: ModelSpec
    query_rewrite: ModelSpec

    def for_role(self, role: Role) -> ModelSpec:
        """The model for a role."""
        spec: ModelSpec = getattr(self, role.value)
        return spec


@dataclass(frozen=True, slots=True)
class _Provider:
    name: str
    env: str | None
    main: str | None  # default model for extraction and evaluation
    cheap: str | None  # default model for the gate and query rewriting


#: Providers in the order a default is chosen when several have keys (Reflexio's order), with
#: their default models (full LiteLLM names). Providers without defaults serve only models the
#: config names explicitly.
_PROVIDERS = (
    _Provider("anthropic", "ANTHROPIC_API_KEY",
              "anthropic/claude-sonnet-4-6", "anthropic/claude-haiku-4-5-20251001"),
    _Provider("gemini", "GEMINI_API_KEY", "gemini/gemini-3-flash-preview", "gemini/gemini-3-flash-preview"),
    _Provider("openrouter", "OPENROUTER_API_KEY",
              "openrouter/openai/gpt-5-mini", "openrouter/openai/gpt-5-nano"),
    _Provider("deepseek", "DEEPSEEK_API_KEY", "deepseek/deepseek-chat", "deepseek/deepseek-chat"),
    _Provider("minimax", None, None, None),
    _Provider("dashscope", None, None, None),
    _Provider("xai", None, None, None),
    _Provider("moonshot", None, None, None),
    _Provider("zai", None, None, None),
    _Provider("mistral", "MISTRAL_API_KEY", "mistral/mistral-small-latest", "mistral/mistral-small-latest"),
    _Provider("groq", "GROQ_API_KEY", None, None),
    _Provider("azure", None, None, None),
    _Provider("openai", "OPENAI_API_KEY", "openai/gpt-5-mini", "openai/gpt-5-nano"),
)  # fmt: skip
_KNOWN = frozenset(p.name for p in _PROVIDERS)
#: Local servers LiteLLM reaches without a key (``api_base`` defaults to their usual port).
_KEYLESS = frozenset({"ollama", "ollama_chat", "hosted_vllm", "lm_studio", "llamafile"})
#: Unprefixed model names people commonly write, by the provider they belong to.
_BARE_NAMES = (("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"),
               ("claude", "anthropic"), ("gemini", "gemini"))  # fmt: skip


class _Unreachable(Exception):
    """A configured model whose provider has no credentials."""


def resolve_llm(config: Config, settings: Settings) -> ModelRoles | None:
    """The model for each role, from the org's config and the server's provider keys.

    Roles map onto Reflexio's ``LLMConfig`` fields: ``gate`` → ``should_run_model_name``,
    ``extraction`` and ``evaluation`` → ``generation_model_name`` (Reflexio has no separate
    evaluation model), ``query_rewrite`` → ``pre_retrieval_model_name``. A role left unset
    takes the provider's default (a small model for the gate and rewriting). A
    ``custom_endpoint`` (any OpenAI-compatible server) serves every role. Keys come from the
    org's ``api_key_config`` first, then the server's environment (``Settings.provider_keys``);
    local servers (``ollama/...``, ``hosted_vllm/...``) need none.

    Returns:
        None when no provider is configured (callers then use the rule extractor).
    """
    names = config.llm_config or LLMConfig()
    keys = config.api_key_config or APIKeyConfig()
    timeout = float(names.generation_timeout_seconds or settings.llm_timeout_seconds)
    if keys.custom_endpoint is not None:
        endpoint = keys.custom_endpoint
        base = ModelSpec("", api_key=endpoint.api_key, api_base=str(endpoint.api_base), timeout_s=timeout)
        served = _prefixed(endpoint.model, "openai")
        return _roles(names, served, served, lambda m: replace(base, model=_prefixed(m, "openai")))
    creds = _credentials(keys, settings)
    default = next((p for p in _PROVIDERS if p.name in creds and p.main), None)
    main = names.generation_model_name or (default.main if default else None)
    if main is None:
        return None
    cheap = default.cheap if default and default.cheap else main
    fallback = default.name if default else None
    try:
        return _roles(names, main, cheap, lambda m: _spec(m, creds, fallback, timeout))
    except _Unreachable as exc:
        log.warning("no credentials for LLM model %s; learning uses the rule extractor", exc)
        return None


def _roles(names: LLMConfig, main: str, cheap: str, spec: Callable[[str], ModelSpec]) -> ModelRoles:
    generation = names.generation_model_name or main
    return ModelRoles(
        gate=spec(names.should_run_model_name or cheap),
        extraction=spec(generation),
        evaluation=spec(generation),
        query_rewrite=spec(names.pre_retrieval_model_name or cheap),
    )


def _credentials(keys: APIKeyConfig, settings: Settings) -> dict[str, dict[str, str]]:
    """Provider name → keyword arguments that authenticate to it (org keys win over env)."""
    env = settings.provider_keys()
    out = {p.name: {"api_key": env[p.env]} for p in _PROVIDERS if p.env and env.get(p.env)}
    for p in _PROVIDERS:
        part = getattr(keys, p.name, None)
        if part is not None and getattr(part, "api_key", None):
            out[p.name] = {"api_key": part.api_key}
            if getattr(part, "api_base", None):
                out[p.name]["api_base"] = part.api_base
    azure = keys.openai.azure_config if keys.openai else None
    if azure is not None:
        out["azure"] = {
            "api_key": azure.api_key,
            "api_base": str(azure.endpoint),
            "api_version": azure.api_version,
        }
    return out


def _spec(
    model: str, creds: Mapping[str, Mapping[str, str]], default: str | None, timeout: float
) -> ModelSpec:
    provider = _provider_of(model) or default
    if provider in _KEYLESS:
        return ModelSpec(model, timeout_s=timeout)
    found = creds.get(provider or "")
    if provider is None or found is None:
        raise _Unreachable(model)
    return ModelSpec(
        _prefixed(model, provider),
        api_key=found.get("api_key"),
        api_base=found.get("api_base"),
        api_version=found.get("api_version"),
        timeout_s=timeout,
    )


def _provider_of(model: str) -> str | None:
    head, sep, _ = model.partition("/")
    if sep and (head in _KEYLESS or head in _KNOWN):
        return head
    return next((provider for prefix, provider in _BARE_NAMES if model.startswith(prefix)), None)


def _prefixed(model: str, provider: str) -> str:
    """``model`` with a LiteLLM provider prefix (for bare names LiteLLM guesses, or fails)."""
    head, sep, _ = model.partition("/")
    return model if sep and (head in _KEYLESS or head in _KNOWN) else f"{provider}/{model}"


# -- the LiteLLM adapter -----------------------------------------------------------------------


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


@functools.cache
def _litellm() -> Any:
    # LiteLLM fetches its model price map from GitHub while importing unless told to use the
    # copy it bundles. This setdefault is Reflexio's only environment *write* (reads stay in
    # config.py); an operator who set the variable keeps their value.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


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
        messages = _with_schema(call)
        started = time.perf_counter()
        text, usage = self._send(spec, call, messages)
        if call.output is None:
            return LLMResult(text, None, _timed(usage, started))
        try:
            return LLMResult(text, parse_output(text, call.output), _timed(usage, started))
        except ValueError as first:
            log.info("%s answer to %s did not validate, repairing: %s", spec.model, call.prompt, first)
            fixed, usage = self._repair(spec, call, _repair_messages(messages, text, first), usage)
        try:
            return LLMResult(fixed, parse_output(fixed, call.output), _timed(usage, started))
        except ValueError as second:
            raise LLMOutputError(
                f"{spec.model} gave no valid {call.output.__name__} for {call.prompt}: {second}",
                usage=_timed(usage, started),
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
        litellm = _litellm()
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


def _timed(usage: Usage, started: float) -> Usage:
    return replace(usage, latency_ms=(time.perf_counter() - started) * 1000.0)


def open_llm(config: Config, settings: Settings, *, retry: RetryPolicy | None = None) -> LiteLLMModel | None:
    """The LiteLLM model an org's config and the server's keys describe, or None without any."""
    roles = resolve_llm(config, settings)
    return LiteLLMModel(roles, retry=retry) if roles is not None else None


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
        """Forward ``call`` and account it."""
        started = time.perf_counter()
        try:
            result = self.llm.complete(call)
        except Exception as exc:  # accounted whatever it was, then re-raised unchanged
            usage = exc.usage if isinstance(exc, LLMError) and exc.usage else Usage()
            self.ledger.record(call, _timed(usage, started), f"{type(exc).__name__}: {exc}"[:1000])
            raise
        self.ledger.record(call, _timed(result.usage, started), None)
        return result
