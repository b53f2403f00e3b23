"""The org config over HTTP: secrets masked on every read, kept across read → write."""

from __future__ import annotations

import json
from typing import Any

from starlette.testclient import TestClient

from reflexio.service.core import Core
from tests.api.support import failed, ok

SECRET_CONFIG: dict[str, Any] = {
    "storage_config": {"type": "postgres", "db_url": "postgresql://app:hunter2-long@db:5432/app"},
    "api_key_config": {"openai": {"api_key": "sk-proj-abcdefghijklmnop"}},
    "playbook_optimizer_config": {"webhook_auth_header": "Bearer tok-9876543210"},
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
    assert config["storage_config"]["db_url"] == "postgresql://app:****@db:5432/app"


def test_get_then_set_keeps_every_secret(client: TestClient, core: Core) -> None:
    ok(client.post("/api/set_config", json=SECRET_CONFIG))
    edited = ok(client.get("/api/get_config")) | {"window_size": 20}
    ok(client.post("/api/set_config", json=edited))
    stored = core.vault.unseal(core.storage.get_org_config("self-host-org") or {})  # encrypted at rest
    assert stored["window_size"] == 20
    assert stored["api_key_config"]["openai"]["api_key"] == "sk-proj-abcdefghijklmnop"
    assert stored["storage_config"]["db_url"] == "postgresql://app:hunter2-long@db:5432/app"
    assert stored["playbook_optimizer_config"]["webhook_auth_header"] == "Bearer tok-9876543210"


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


def test_a_damaged_stored_config_can_still_be_replaced(client: TestClient, core: Core) -> None:
    core.storage.put_org_config("self-host-org", {"storage_config": {"type": "postgres"}})  # no db_url
    failed(client.get("/api/get_config"), 422)
    ok(client.post("/api/set_config", json={"window_size": 12, "stride_size": 6}))
    assert ok(client.get("/api/get_config"))["window_size"] == 12
