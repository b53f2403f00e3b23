"""The per-org Config: 0.2.32 defaults, presets, legacy shapes, strict writes, lenient loads."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from reflexio.models import Config, StorageConfigPostgres, StorageConfigSQLite


def test_defaults_match_the_original() -> None:
    config = Config()
    assert (config.window_size, config.stride_size) == (10, 8)
    assert config.extraction_idle_timeout_seconds == 21_600
    assert config.storage_config is None
    assert config.profile_extractor_config is not None
    assert config.user_playbook_extractor_config is not None
    aggregation = config.user_playbook_extractor_config.aggregation_config
    assert (aggregation.min_cluster_size, aggregation.reaggregation_trigger_count) == (2, 2)
    assert aggregation.clustering_similarity is None
    assert aggregation.direction_overlap_threshold == 0.6
    assert config.agent_success_config is not None
    assert config.agent_success_config.sampling_rate == 0.05
    assert config.retrieval_floor.enabled is False and config.retrieval_floor.pool_size == 30
    assert config.lineage_gc.tombstone_grace_window_days == 90
    assert config.pending_tool_call_config.pending_ttl_seconds == 86_400
    assert config.shadow_comparison_judge_prompt_version == "v1.1.0"
    assert (config.eval_sample_n_per_stratum, config.eval_concurrency_limit) == (200, 10)


def test_our_additions_have_their_defaults() -> None:
    config = Config()
    assert config.session_idle_seconds == 600
    assert config.search_threshold is None
    with pytest.raises(ValidationError):
        Config(search_threshold=1.5)


@pytest.mark.parametrize(
    ("preset", "expected"),
    [
        ("quick_chat", (5, 3)),
        ("standard", (10, 8)),
        ("long_form", (25, 10)),
        ("high_volume", (15, 8)),
    ],
)
def test_presets_set_window_and_stride(preset: str, expected: tuple[int, int]) -> None:
    config = Config.model_validate({"extraction_preset": preset})
    assert (config.window_size, config.stride_size) == expected


def test_explicit_window_wins_over_preset() -> None:
    config = Config.model_validate({"extraction_preset": "long_form", "window_size": 30})
    assert (config.window_size, config.stride_size) == (30, 10)


def test_stride_may_not_exceed_window() -> None:
    with pytest.raises(ValidationError, match="stride_size must be <= window_size"):
        Config(window_size=4, stride_size=5)


def test_legacy_0_2_13_shape_is_upgraded() -> None:
    legacy: dict[str, Any] = {
        "storage_config": None,
        "batch_size": 12,
        "batch_interval": 6,
        "profile_extractor_configs": [
            {
                "extractor_name": "default_profile_extractor",
                "profile_content_definition_prompt": "Extract facts.",
                "metadata_definition_prompt": "retired",
                "batch_size_override": 4,
            },
            {"extractor_name": "second", "extraction_definition_prompt": "ignored"},
        ],
        "agent_feedback_configs": [
            {
                "feedback_name": "fb",
                "feedback_definition_prompt": "Extract rules.",
                "feedback_aggregator_config": {"min_feedback_threshold": 3, "refresh_count": 4},
            }
        ],
        "agent_success_configs": [],
    }
    config = Config.model_validate(legacy)
    assert (config.window_size, config.stride_size) == (12, 6)
    assert config.profile_extractor_config is not None
    assert config.profile_extractor_config.extraction_definition_prompt == "Extract facts."
    assert config.profile_extractor_config.window_size_override == 4
    playbooks = config.user_playbook_extractor_config
    assert playbooks is not None and playbooks.extraction_definition_prompt == "Extract rules."
    assert playbooks.extractor_name == "fb"
    assert playbooks.aggregation_config.min_cluster_size == 3
    assert playbooks.aggregation_config.reaggregation_trigger_count == 4
    assert config.agent_success_config is None  # an empty legacy list meant "off"


def test_new_names_win_over_legacy_ones() -> None:
    config = Config.model_validate({"window_size": 9, "batch_size": 20, "stride_size": 3})
    assert config.window_size == 9


def test_null_stored_aggregation_means_defaults() -> None:
    config = Config.model_validate(
        {
            "user_playbook_extractor_config": {
                "extraction_definition_prompt": "x",
                "aggregation_config": None,
            }
        }
    )
    assert config.user_playbook_extractor_config is not None
    assert config.user_playbook_extractor_config.aggregation_config.min_cluster_size == 2


@pytest.mark.parametrize(
    "payload",
    [
        {"reflection_config": {}},
        {"lineage_gc": {"enabled": True, "grace": 1}},
        {"storage_config": {"db_path": "/x", "url": "https://y"}},
    ],
)
def test_api_writes_reject_unknown_keys(payload: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Config.model_validate(payload)


def test_stored_configs_load_leniently() -> None:
    config = Config.from_stored(
        {
            "reflection_config": {"enabled": True},
            "lineage_gc": {"enabled": False, "retired_knob": 1},
            "window_size": None,
            "storage_config": {"type": "postgres", "db_url": "postgresql://u:p@h/db"},
        }
    )
    assert config.lineage_gc.enabled is False
    assert config.window_size == 10
    assert isinstance(config.storage_config, StorageConfigPostgres)


def test_stored_storage_config_is_still_strict() -> None:
    # A Supabase config that lost its db_url must not quietly become SQLite.
    with pytest.raises(ValidationError):
        Config.from_stored({"storage_config": {"url": "https://x.supabase.co", "key": "k"}})


def test_storage_union_round_trips_with_aliases() -> None:
    postgres = Config.model_validate(
        {"storage_config": {"type": "postgres", "db_url": "postgresql://h/db", "schema": "s"}}
    )
    dumped = postgres.model_dump(mode="json")["storage_config"]
    assert dumped["type"] == "postgres" and dumped["schema"] == "s"
    assert Config.model_validate({"storage_config": dumped}).storage_config == postgres.storage_config
    sqlite = Config.model_validate({"storage_config": {"db_path": "/tmp/r.db"}})
    assert isinstance(sqlite.storage_config, StorageConfigSQLite)
    assert sqlite.model_dump(mode="json")["storage_config"] == {"db_path": "/tmp/r.db"}


def test_openai_needs_a_credential() -> None:
    with pytest.raises(ValidationError, match="api_key"):
        Config.model_validate({"api_key_config": {"openai": {"api_key": "  "}}})


def test_llm_config_names_a_model_per_role() -> None:
    config = Config.model_validate(
        {"llm_config": {"generation_model_name": "gpt", "embedding_model_name": "local/minilm"}}
    )
    assert config.llm_config is not None
    assert config.llm_config.generation_model_name == "gpt"
    assert config.llm_config.should_run_model_name is None
