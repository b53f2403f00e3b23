"""Which model serves each role: the org's config and the server's provider keys, resolved.

Defaults follow Reflexio's provider order; local OpenAI-compatible servers (Ollama, vLLM,
llama.cpp, LM Studio) need no key, only a base URL.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from reflexio.config import Settings
from reflexio.llm.calls import Role
from reflexio.models.org_config import APIKeyConfig, Config, LLMConfig

log = logging.getLogger(__name__)


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
