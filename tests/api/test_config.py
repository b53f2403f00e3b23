"""The org config over HTTP: secrets masked on every read, kept across read → write."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest
from starlette.testclient import TestClient

from reflexio.service.core import Core
from tests.api.support import failed, ok

SECRET_CONFIG: dict[str, Any] = {
    "api_key_config": {
        "openai": {"api_key": "sk-proj-abcdefghijklmnop"},
        "custom_endpoint": {
            "model": "openai/local",
            "api_key": "tok-9876543210",
            "api_base": "https://app:hunter2-long@llm.internal/v1",
        },
    },
    "window_size": 12,
    "stride_size": 6,
}
PLAINTEXT = ("hunter2-long", "sk-proj-abcdefghijklmnop", "tok-9876543210")


def test_defaults_are_served_with_storage_config_present(client: TestClient) -> None:
    config = ok(client.get("/api/get_config"))
    assert "storage_config" in config and config["storage_config"] is None
    assert config["window_size"] == 10 and config["stride_size"] == 8
    assert config["session_idle_seconds"] == 600


def test_secrets_are_masked_on_every_read(client: TestClient) -> None:
    assert ok(client.post("/api/set_config", json=SECRET_CONFIG)) == {
        "success": True,
        "msg": "Configuration saved",
    }
    config = ok(client.get("/api/get_config"))
    text = json.dumps(config)
    assert not any(secret in text for secret in PLAINTEXT)
    assert config["api_key_config"]["openai"]["api_key"] == "****mnop"
    assert config["api_key_config"]["custom_endpoint"]["api_base"] == "https://app:****@llm.internal/v1"


def test_get_then_set_keeps_every_secret(client: TestClient, core: Core) -> None:
    ok(client.post("/api/set_config", json=SECRET_CONFIG))
    edited = ok(client.get("/api/get_config")) | {"window_size": 20}
    ok(client.post("/api/set_config", json=edited))
    stored = core.vault.unseal(core.storage.get_org_config("self-host-org") or {})  # encrypted at rest
    assert stored["window_size"] == 20
    assert stored["api_key_config"]["openai"]["api_key"] == "sk-proj-abcdefghijklmnop"
    endpoint = stored["api_key_config"]["custom_endpoint"]
    assert endpoint == SECRET_CONFIG["api_key_config"]["custom_endpoint"]


def test_an_invalid_config_is_422_naming_the_field(client: TestClient) -> None:
    body = failed(client.post("/api/set_config", json={"window_size": 0}), 422)
    assert "window_size" in body["detail"]
    assert (
        "stride_size"
        in failed(client.post("/api/set_config", json={"window_size": 4, "stride_size": 8}), 422)["detail"]
    )
    assert "surprise" in failed(client.post("/api/update_config", json={"surprise": 1}), 422)["detail"]
    failed(client.post("/api/set_config", json=["not", "an", "object"]), 422)


def test_a_mask_that_matches_no_stored_secret_is_refused(client: TestClient, core: Core) -> None:
    body = {"api_key_config": {"openai": {"api_key": "****zzzz"}}}
    assert "masked secret" in failed(client.post("/api/update_config", json=body), 422)["detail"]
    assert core.storage.get_org_config("self-host-org") is None


def test_update_config_replaces_top_level_keys_only(client: TestClient, core: Core) -> None:
    ok(client.post("/api/set_config", json=SECRET_CONFIG))
    assert (
        ok(client.post("/api/update_config", json={"search_threshold": 0.3}))["msg"]
        == "Configuration updated"
    )
    stored = core.vault.unseal(core.storage.get_org_config("self-host-org") or {})  # encrypted at rest
    assert stored["search_threshold"] == 0.3 and stored["window_size"] == 12
    assert stored["api_key_config"]["openai"]["api_key"] == "sk-proj-abcdefghijklmnop"
    assert (
        ok(client.post("/api/update_config", json={"search_threshold": 0.3}))["msg"]
        == "Configuration unchanged"
    )


def test_experiment_fields_cannot_be_changed_by_a_config_write(client: TestClient) -> None:
    body = {"retrieval_experiment_config": {"experiment_id": "exp-1", "holdout_percentage": 10}}
    assert (
        "retrieval_experiment_config" in failed(client.post("/api/update_config", json=body), 409)["detail"]
    )


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ({"playbook_optimizer_config": {"enabled": True}}, "playbook_optimizer_config"),
        ({"storage_config": {"type": "postgres", "db_url": "postgresql://h/db"}}, "storage_config"),
        ({"storage_config": {"db_path": "/elsewhere.db"}}, "storage_config"),
        ({"governance_retention": {"audit_events_retention_enabled": True}}, "governance_retention"),
        ({"pending_tool_call_config": {"enabled": True}}, "pending_tool_call_config"),
        ({"retrieval_floor": {"enabled": True}}, "retrieval_floor"),
        ({"enable_document_expansion": True}, "enable_document_expansion"),
        ({"extraction_idle_timeout_seconds": 60}, "extraction_idle_timeout_seconds"),
        ({"storage_config_test": 3}, "storage_config_test"),
        (
            {"llm_config": {"embedding_model_name": "text-embedding-3-small"}},
            "llm_config.embedding_model_name",
        ),
        (
            {
                "user_playbook_extractor_config": {
                    "extraction_definition_prompt": "rules",
                    "deduplication_config": {},
                }
            },
            "user_playbook_extractor_config.deduplication_config",
        ),
        (
            {
                "user_playbook_extractor_config": {
                    "extraction_definition_prompt": "r",
                    "tagging_definition_prompt": "t",
                }
            },
            "user_playbook_extractor_config.tagging_definition_prompt",
        ),
    ],
)
def test_a_setting_this_server_cannot_act_on_is_422_naming_it(
    client: TestClient, core: Core, setting: dict[str, Any], named: str
) -> None:
    for route in ("/api/set_config", "/api/update_config"):
        body = failed(client.post(route, json=setting), 422)
        assert named in body["detail"] and "not supported by this server" in body["detail"]
        assert body["details"]["fields"] == [named]
    assert core.storage.get_org_config("self-host-org") is None


def test_unsupported_settings_at_their_defaults_are_accepted(client: TestClient) -> None:
    """What clients send when they write the whole document back (set_config(get_config()))."""
    config = ok(client.get("/api/get_config"))
    assert ok(client.post("/api/set_config", json=config))["success"]
    sqlite_default = {"storage_config": {"db_path": None}, "storage_config_test": None}
    assert ok(client.post("/api/update_config", json=sqlite_default))["success"]


def test_a_damaged_stored_config_can_still_be_replaced(client: TestClient, core: Core) -> None:
    core.storage.put_org_config("self-host-org", {"storage_config": {"type": "postgres"}})  # no db_url
    failed(client.get("/api/get_config"), 422)
    ok(client.post("/api/set_config", json={"window_size": 12, "stride_size": 6}))
    assert ok(client.get("/api/get_config"))["window_size"] == 12


def test_a_provider_key_is_refused_while_litellm_is_not_installed(
    client: TestClient, core: Core, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "litellm", None)  # what Python does for a module not installed
    key = {"api_key_config": {"openai": {"api_key": "sk-proj-abcdefghijklmnop"}}}
    for route in ("/api/set_config", "/api/update_config"):
        detail = failed(client.post(route, json=key), 422)["detail"]
        assert "LiteLLM is not installed" in detail and "pip install 'reflexio[llm]'" in detail
    assert core.storage.get_org_config("self-host-org") is None
    ok(client.post("/api/update_config", json={"window_size": 12}))  # other settings still change
    monkeypatch.delitem(sys.modules, "litellm")
    ok(client.post("/api/update_config", json=key))  # installed: accepted
