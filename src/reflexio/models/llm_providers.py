"""The LLM parts of an org's ``Config``: provider credentials and the model chosen per role.

Field names are Reflexio 0.2.32's. Secrets here are masked on every read
(``Config.masked``); ``models.org_config`` assembles these parts into the config and
re-exports them.
"""

from typing import Any, Self

from pydantic import ConfigDict, Field, model_validator

from reflexio.models.fields import NON_BLANK_PATTERN, NonEmptyStr, SafeHttpUrl, StrictModel

__all__ = [
    "APIKeyConfig",
    "AzureOpenAIConfig",
    "CustomEndpointConfig",
    "DashScopeConfig",
    "LLMConfig",
    "OpenAIConfig",
    "ProviderKeyConfig",
]


class ProviderKeyConfig(StrictModel):
    """A provider reached with an API key alone (Anthropic, Gemini, OpenRouter, ...)."""

    api_key: NonEmptyStr


class DashScopeConfig(ProviderKeyConfig):
    """Alibaba DashScope: a key plus an optional regional endpoint."""

    api_base: str | None = None


class AzureOpenAIConfig(StrictModel):
    """An Azure OpenAI deployment."""

    api_key: NonEmptyStr
    endpoint: SafeHttpUrl
    api_version: str = "2024-02-15-preview"
    deployment_name: str | None = None


class OpenAIConfig(StrictModel):
    """OpenAI directly or through Azure; at least one of the two must be given."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {
                    "properties": {"api_key": {"type": "string", "pattern": NON_BLANK_PATTERN}},
                    "required": ["api_key"],
                },
                {"properties": {"azure_config": {"type": "object"}}, "required": ["azure_config"]},
            ]
        },
    )

    api_key: str | None = None
    azure_config: AzureOpenAIConfig | None = None

    @model_validator(mode="after")
    def _needs_some_credential(self) -> Self:
        if self.api_key is not None and not self.api_key.strip():
            self.api_key = None
        if not self.api_key and not self.azure_config:
            raise ValueError("At least one of 'api_key' or 'azure_config' must be provided")
        return self


class CustomEndpointConfig(StrictModel):
    """An OpenAI-compatible server; when set it serves completions (not embeddings)."""

    model: NonEmptyStr
    api_key: NonEmptyStr
    api_base: SafeHttpUrl


def _bare_key_schema(schema: dict[str, Any]) -> None:
    """Add the bare-key form (a non-blank string) beside each provider's object form."""
    bare_key = ProviderKeyConfig.model_json_schema()["properties"]["api_key"]
    for name, field in schema.get("properties", {}).items():
        if name != "custom_endpoint" and "anyOf" in field:
            field["anyOf"].insert(1, {key: bare_key[key] for key in ("type", "pattern")})


class APIKeyConfig(StrictModel):
    """Credentials per LLM provider; secrets here are masked on every read.

    A provider may be given as its bare key (``openai="sk-..."``), as Reflexio 0.2.7 wrote it;
    the schema says so (:func:`_bare_key_schema`), so clients and fuzzers know it is accepted.
    """

    model_config = ConfigDict(extra="forbid", json_schema_extra=_bare_key_schema)

    custom_endpoint: CustomEndpointConfig | None = None
    openai: OpenAIConfig | None = None
    anthropic: ProviderKeyConfig | None = None
    openrouter: ProviderKeyConfig | None = None
    gemini: ProviderKeyConfig | None = None
    minimax: ProviderKeyConfig | None = None
    deepseek: ProviderKeyConfig | None = None
    dashscope: DashScopeConfig | None = None
    zai: ProviderKeyConfig | None = None
    moonshot: ProviderKeyConfig | None = None
    xai: ProviderKeyConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _bare_keys(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        return {
            name: {"api_key": value} if isinstance(value, str) and name != "custom_endpoint" else value
            for name, value in data.items()
        }


class LLMConfig(StrictModel):
    """Model name per role; ``None`` means the server's default for that role."""

    should_run_model_name: str | None = None  # the cheap "is there anything to learn?" gate
    generation_model_name: str | None = None  # extraction, aggregation and evaluation
    embedding_model_name: str | None = None
    pre_retrieval_model_name: str | None = None  # query rewriting
    generation_timeout_seconds: int | None = Field(default=None, gt=0, le=3_600)
