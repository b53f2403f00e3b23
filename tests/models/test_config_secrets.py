"""Secrets are masked on read and survive a read-edit-write round trip unchanged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reflexio.models import Config, mask_secret, mask_url

SECRETS: dict[str, Any] = {
    "storage_config": {
        "type": "postgres",
        "db_url": "postgresql://reflexio:hunter2-long@db:5432/app",
        "read_db_url": "postgresql://reader:r3plica-pass@replica/app?sslmode=require",
    },
    "api_key_config": {
        "openai": {
            "api_key": "sk-proj-abcdefghijklmnop",
            "azure_config": {"api_key": "azure-key-0123456789", "endpoint": "https://x.azure.com"},
        },
        "anthropic": {"api_key": "sk-ant-api03-zyxwvut"},
        "custom_endpoint": {
            "model": "m",
            "api_key": "local",
            "api_base": "http://localhost:8000/v1",
        },
    },
    "playbook_optimizer_config": {"webhook_auth_header": "Bearer tok-9876543210"},
    "pending_tool_call_config": {"hmac_secrets": ["hmac-first-secret-1", "hmac-second-secret-2"]},
}
PLAINTEXT = [
    "hunter2-long",
    "r3plica-pass",
    "sk-proj-abcdefghijklmnop",
    "azure-key-0123456789",
    "sk-ant-api03-zyxwvut",
    "tok-9876543210",
    "hmac-first-secret-1",
]


def stored() -> Config:
    return Config.model_validate(SECRETS)


def test_mask_shows_only_the_last_four_characters() -> None:
    assert mask_secret("sk-proj-abcdefghijklmnop") == "****mnop"
    assert mask_secret("short") == "****"


def test_url_passwords_are_masked() -> None:
    assert mask_url("postgresql://u:pw@h:5432/db") == "postgresql://u:****@h:5432/db"
    assert mask_url("postgresql://h/db?user=u&password=pw") == "postgresql://h/db?user=u&password=****"
    assert mask_url("https://api.example.com/v1") == "https://api.example.com/v1"


def test_masked_config_contains_no_secret() -> None:
    text = json.dumps(stored().masked())
    for secret in PLAINTEXT:
        assert secret not in text
    masked = stored().masked()
    assert masked["api_key_config"]["openai"]["api_key"] == "****mnop"
    assert masked["storage_config"]["db_url"] == "postgresql://reflexio:****@db:5432/app"
    assert masked["pending_tool_call_config"]["hmac_secrets"] == ["****et-1", "****et-2"]


def test_masked_config_is_still_a_valid_config() -> None:
    Config.model_validate(stored().masked())


def test_round_trip_of_masked_values_keeps_the_stored_secrets() -> None:
    edited = stored().masked()
    edited["window_size"] = 20
    result = stored().merge_update(edited)
    assert result.window_size == 20
    expected = stored().model_dump(mode="json") | {"window_size": 20}
    assert result.model_dump(mode="json") == expected


def test_a_new_secret_replaces_the_stored_one() -> None:
    edited = stored().masked()
    edited["api_key_config"]["anthropic"]["api_key"] = "sk-ant-brand-new-key"
    result = stored().merge_update(edited)
    assert result.api_key_config is not None and result.api_key_config.anthropic is not None
    assert result.api_key_config.anthropic.api_key == "sk-ant-brand-new-key"


def test_a_mask_that_matches_nothing_is_refused() -> None:
    edited = stored().masked()
    edited["api_key_config"]["gemini"] = {"api_key": "****abcd"}
    with pytest.raises(ValueError, match=r"api_key_config\.gemini\.api_key"):
        stored().merge_update(edited)


def test_partial_update_keeps_secrets_and_other_fields() -> None:
    result = stored().merge_update({"shadow_mode_enabled": True}, partial=True)
    assert result.shadow_mode_enabled is True
    assert result.model_dump(mode="json") == stored().model_dump(mode="json") | {"shadow_mode_enabled": True}


def test_partial_update_of_a_nested_object_restores_its_masked_secret() -> None:
    api_keys = stored().masked()["api_key_config"]
    api_keys["gemini"] = {"api_key": "gemini-new-key-1234"}
    result = stored().merge_update({"api_key_config": api_keys}, partial=True)
    assert result.api_key_config is not None and result.api_key_config.openai is not None
    assert result.api_key_config.openai.api_key == "sk-proj-abcdefghijklmnop"
    assert result.api_key_config.gemini is not None


def test_partial_preset_change_wins_over_stored_window() -> None:
    result = Config().merge_update({"extraction_preset": "quick_chat"}, partial=True)
    assert (result.window_size, result.stride_size) == (5, 3)


def test_full_write_accepts_legacy_names() -> None:
    result = Config().merge_update({"batch_size": 6, "batch_interval": 2})
    assert (result.window_size, result.stride_size) == (6, 2)


def test_full_write_keeps_experiments_it_does_not_mention() -> None:
    experiment = {"experiment_id": "e1", "holdout_percentage": 10.0}
    current = Config.model_validate({"retrieval_experiment_config": experiment})
    result = current.merge_update({"window_size": 12})
    assert result.retrieval_experiment_config is not None
    assert result.retrieval_experiment_config.experiment_id == "e1"
    assert result.window_size == 12
