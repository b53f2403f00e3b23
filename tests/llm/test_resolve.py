"""Which model serves each role, from the org config and the server's provider keys."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reflexio.config import Settings
from reflexio.llm import LiteLLMModel, Role, open_llm, resolve_llm
from reflexio.models.org_config import Config


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.from_env({"HOME": str(tmp_path), **env})


def config(**fields: Any) -> Config:
    return Config.model_validate(fields)


def test_no_provider_means_no_llm(tmp_path: Path) -> None:
    assert resolve_llm(Config(), settings(tmp_path)) is None
    assert open_llm(Config(), settings(tmp_path)) is None


def test_env_key_gives_the_provider_defaults(tmp_path: Path) -> None:
    roles = resolve_llm(Config(), settings(tmp_path, OPENAI_API_KEY="sk-env"))
    assert roles is not None
    assert roles.extraction.model == "openai/gpt-5-mini" and roles.extraction.api_key == "sk-env"
    assert roles.evaluation == roles.extraction
    assert roles.gate.model == roles.query_rewrite.model == "openai/gpt-5-nano"
    assert "sk-env" not in repr(roles)  # keys never show in logs
    assert isinstance(open_llm(Config(), settings(tmp_path, OPENAI_API_KEY="sk-env")), LiteLLMModel)


def test_org_keys_win_and_follow_the_provider_order(tmp_path: Path) -> None:
    org = config(api_key_config={"openai": {"api_key": "sk-org"}, "anthropic": {"api_key": "ant-org"}})
    roles = resolve_llm(org, settings(tmp_path, OPENAI_API_KEY="sk-env"))
    assert roles is not None
    assert roles.extraction.model.startswith("anthropic/") and roles.extraction.api_key == "ant-org"
    assert roles.gate.model == "anthropic/claude-haiku-4-5-20251001"


def test_llm_config_names_the_model_per_role(tmp_path: Path) -> None:
    org = config(
        llm_config={
            "should_run_model_name": "gpt-4o-mini",
            "generation_model_name": "anthropic/claude-sonnet-4-6",
            "pre_retrieval_model_name": "openai/gpt-4.1-nano",
            "generation_timeout_seconds": 30,
        },
        api_key_config={"openai": {"api_key": "sk-org"}, "anthropic": {"api_key": "ant-org"}},
    )
    roles = resolve_llm(org, settings(tmp_path))
    assert roles is not None
    assert roles.for_role(Role.GATE).model == "openai/gpt-4o-mini"  # bare names get their prefix
    assert roles.for_role(Role.GATE).api_key == "sk-org"
    assert roles.for_role(Role.EXTRACTION).api_key == "ant-org"
    assert roles.for_role(Role.EVALUATION).model == "anthropic/claude-sonnet-4-6"
    assert roles.for_role(Role.QUERY_REWRITE).model == "openai/gpt-4.1-nano"
    assert roles.gate.timeout_s == 30.0


def test_a_custom_endpoint_serves_every_role(tmp_path: Path) -> None:
    org = config(
        api_key_config={
            "custom_endpoint": {
                "model": "qwen2.5:7b",
                "api_key": "none",
                "api_base": "https://llm.internal/v1",
            },
        },
        llm_config={"should_run_model_name": "qwen2.5:0.5b"},
    )
    roles = resolve_llm(org, settings(tmp_path, OPENAI_API_KEY="sk-env"))
    assert roles is not None
    assert roles.extraction.model == "openai/qwen2.5:7b" and roles.gate.model == "openai/qwen2.5:0.5b"
    assert {roles.gate.api_base, roles.extraction.api_base} == {"https://llm.internal/v1"}
    assert roles.query_rewrite.model == "openai/qwen2.5:7b"


def test_local_servers_need_no_key(tmp_path: Path) -> None:
    org = config(llm_config={"generation_model_name": "ollama/llama3.2"})
    roles = resolve_llm(org, settings(tmp_path))
    assert roles is not None
    assert roles.gate.model == roles.extraction.model == "ollama/llama3.2" and roles.gate.api_key is None


def test_a_model_without_credentials_means_no_llm(tmp_path: Path) -> None:
    org = config(llm_config={"generation_model_name": "anthropic/claude-sonnet-4-6"})
    assert resolve_llm(org, settings(tmp_path, OPENAI_API_KEY="sk-env")) is None


def test_azure_deployments(tmp_path: Path) -> None:
    org = config(
        api_key_config={
            "openai": {
                "azure_config": {
                    "api_key": "az",
                    "endpoint": "https://x.openai.azure.com",
                    "deployment_name": "d",
                }
            }
        },
        llm_config={"generation_model_name": "azure/my-deployment"},
    )
    roles = resolve_llm(org, settings(tmp_path))
    assert roles is not None
    assert roles.extraction.model == "azure/my-deployment" and roles.extraction.api_version
    assert (roles.extraction.api_base or "").startswith("https://x.openai.azure.com")
