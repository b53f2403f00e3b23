"""The wire models keep Reflexio 0.2.32 / client 0.2.16 names, defaults and limits."""

from __future__ import annotations

import ast
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import reflexio.models as package
from reflexio.models import (
    AgentPlaybook,
    GetAgentPlaybooksRequest,
    GetInteractionsRequest,
    GetRetrievedLearningEvaluationResultsRequest,
    GetUserProfilesRequest,
    Interaction,
    InteractionData,
    ProfileChangeLog,
    ProfileTimeToLive,
    ProfileView,
    RerunPlaybookGenerationRequest,
    RetrievedLearning,
    RunPlaybookAggregationRequest,
    SearchMode,
    SearchUserPlaybookRequest,
    SearchUserProfileRequest,
    Status,
    ToolUsed,
    UnifiedSearchRequest,
    UnifiedSearchViewResponse,
    UserActionType,
    UserPlaybook,
    UserPlaybookView,
    UserProfile,
)

MODELS_DIR = Path(__file__).parents[2] / "src" / "reflexio" / "models"


# (model, field, Reflexio's default) for the defaults callers most rely on.
ORIGINAL_DEFAULTS: list[tuple[type[BaseModel], str, Any]] = [
    (InteractionData, "role", "User"),
    (InteractionData, "content", ""),
    (InteractionData, "user_action", UserActionType.NONE),
    (InteractionData, "tools_used", []),
    (InteractionData, "retrieved_learnings", []),
    (UnifiedSearchRequest, "top_k", 5),
    (UnifiedSearchRequest, "threshold", None),
    (UnifiedSearchRequest, "search_mode", SearchMode.HYBRID),
    (UnifiedSearchRequest, "entity_types", None),
    (UnifiedSearchRequest, "agent_playbook_status_filter", None),
    (UnifiedSearchRequest, "enable_reformulation", False),
    (SearchUserProfileRequest, "top_k", 10),
    (SearchUserPlaybookRequest, "top_k", 10),
    (GetInteractionsRequest, "top_k", 30),
    (GetUserProfilesRequest, "top_k", 30),
    (GetAgentPlaybooksRequest, "limit", 100),
    (GetRetrievedLearningEvaluationResultsRequest, "limit", 100),
    (RunPlaybookAggregationRequest, "agent_version", "agent-v0"),
    (RunPlaybookAggregationRequest, "playbook_name", "playbook"),
    (UnifiedSearchViewResponse, "degraded", False),
]


@pytest.mark.parametrize(("model", "field", "expected"), ORIGINAL_DEFAULTS)
def test_defaults_match_the_original(model: type[BaseModel], field: str, expected: Any) -> None:
    assert model.model_fields[field].get_default(call_default_factory=True) == expected


def test_entity_defaults_match_the_original() -> None:
    profile = UserProfile(
        profile_id="p", user_id="u", content="c", last_modified_timestamp=1,
        generated_from_request_id="r",
    )  # fmt: skip
    playbook = AgentPlaybook(agent_version="v", content="c")
    assert profile.profile_time_to_live == ProfileTimeToLive.INFINITY
    assert profile.expiration_timestamp == 4_102_444_800
    assert profile.status is None
    assert playbook.playbook_status == "pending"
    assert playbook.agent_playbook_id == 0


def test_timestamps_are_integer_epoch_seconds() -> None:
    turn = InteractionData(content="hi")
    assert isinstance(turn.created_at, int)
    assert turn.created_at > 1_600_000_000
    assert InteractionData(content="hi", created_at=123).created_at == 123


def test_current_status_is_json_null_and_round_trips() -> None:
    assert Status.CURRENT.value is None
    assert Status(None) is Status.CURRENT
    view = ProfileView(
        profile_id="p", user_id="u", content="c", last_modified_timestamp=1,
        generated_from_request_id="r", status=Status.CURRENT,
    )  # fmt: skip
    assert json.loads(view.model_dump_json())["status"] is None
    assert Status("archived") is Status.ARCHIVED
    assert isinstance(Status.SUPERSEDED, str) and Status.SUPERSEDED.value == "superseded"
    assert "CURRENT" in repr(Status.CURRENT)


def test_status_filters_use_null_for_current() -> None:
    request = GetUserProfilesRequest.model_validate(
        {"user_id": "u", "status_filter": [None, "archived", "merged"]}
    )
    assert request.status_filter == [None, Status.ARCHIVED, Status.MERGED]
    assert request.model_dump(mode="json")["status_filter"] == [None, "archived", "merged"]


def test_request_time_filters_accept_iso_strings_and_epochs() -> None:
    # The 0.2.16 client sends datetimes as naive ISO strings; we read them as UTC.
    iso = GetInteractionsRequest.model_validate({"user_id": "u", "start_time": "2024-01-01T00:00:00"})
    epoch = GetInteractionsRequest.model_validate({"user_id": "u", "start_time": 1_704_067_200})
    assert iso.start_time == epoch.start_time
    assert iso.start_time is not None and iso.start_time.tzinfo is not None
    with pytest.raises(ValidationError, match="end_time must be after start_time"):
        GetInteractionsRequest.model_validate({"user_id": "u", "start_time": 10, "end_time": 10})


def test_unknown_keys_are_stripped_and_reported_as_paths() -> None:
    turn = InteractionData.model_validate(
        {
            "content": "hi",
            "Content": "typo",
            "user_id": "copied by a plugin",
            "tools_used": [{"tool_name": "search", "stat": "ok"}],
            "retrieved_learnings": [{"kind": "profile", "learning_id": "p1", "score": 1}],
        }
    )
    assert turn.unknown_fields() == [
        "Content",
        "retrieved_learnings[0].score",
        "tools_used[0].stat",
    ]
    dumped = turn.model_dump()
    assert "Content" not in dumped and "user_id" not in dumped
    assert "stat" not in dumped["tools_used"][0]


def test_tool_status_is_coerced_never_rejected() -> None:
    assert ToolUsed.model_validate({"tool_name": "t", "status": 3}).status == "3"
    assert ToolUsed.model_validate({"tool_name": "t", "status": None}).status == ""
    assert ToolUsed.model_validate({"tool_name": "t", "status": "x" * 500}).status == "x" * 100


def test_empty_interaction_detection() -> None:
    assert InteractionData().is_empty()
    assert InteractionData(content="   ").is_empty()
    assert not InteractionData(expert_content="ideal").is_empty()
    assert not InteractionData(tools_used=[ToolUsed(tool_name="t")]).is_empty()
    assert not InteractionData(
        retrieved_learnings=[RetrievedLearning(kind="profile", learning_id="p")]
    ).is_empty()
    assert not InteractionData(
        user_action=UserActionType.CLICK, user_action_description="clicked buy"
    ).is_empty()


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"user_action": "click"}, "user_action requires a user_action_description"),
        (
            {"content": "x", "interacted_image_url": "https://a/b.png", "image_encoding": "AAA"},
            "cannot both be set",
        ),
        ({"content": "x", "interacted_image_url": "ftp://a/b.png"}, "scheme"),
        ({"content": "x", "interacted_image_url": "http://169.254.169.254/x"}, "metadata"),
        ({"role": "r" * 1_001}, "at most 1000"),
        ({"user_action_description": "d" * 10_001}, "at most 10000"),
        ({"retrieved_learnings": [{"kind": "profile", "learning_id": ""}]}, "at least 1"),
        ({"retrieved_learnings": [{"kind": "memory", "learning_id": "x"}]}, "kind"),
        ({"citations": [{"kind": "profile", "real_id": "x"}] * 1_001}, "at most 1000"),
    ],
)
def test_interaction_limits(payload: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        InteractionData.model_validate(payload)


@pytest.mark.parametrize(
    ("model", "payload"),
    [
        (UnifiedSearchRequest, {"query": "   "}),
        (UnifiedSearchRequest, {"query": "q", "top_k": 101}),
        (UnifiedSearchRequest, {"query": "q", "threshold": 1.5}),
        (UnifiedSearchRequest, {"query": "q", "user_id": "u" * 256}),
        (UnifiedSearchRequest, {"query": "q", "entity_types": ["memories"]}),
        (UnifiedSearchRequest, {"query": "q", "source": "Not A Slug"}),
        (UnifiedSearchRequest, {"query": "q", "interaction_id": 0}),
        (SearchUserPlaybookRequest, {"top_k": 101}),
        (GetRetrievedLearningEvaluationResultsRequest, {"limit": 1_001}),
    ],
)
def test_request_limits(model: type[BaseModel], payload: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(payload)


def test_empty_agent_version_means_the_default() -> None:
    assert RerunPlaybookGenerationRequest(agent_version="").agent_version == "agent-v0"


def test_views_never_carry_null_tags_and_drop_internal_fields() -> None:
    playbook = UserPlaybook(agent_version="v", request_id="r", content="c", tags=None, notes="n")
    view = playbook.to_view()
    assert isinstance(view, UserPlaybookView)
    assert view.tags == []
    assert "notes" not in view.model_dump()
    assert view.score is None


def test_interaction_view_hides_citations_and_image_bytes() -> None:
    stored = Interaction.model_validate(
        {
            "user_id": "u",
            "request_id": "r",
            "content": "hi",
            "image_encoding": "AAAA",
            "citations": [{"kind": "profile", "real_id": "p"}],
            "retrieved_learnings": [{"kind": "profile", "learning_id": "p"}],
        }
    )
    shown = stored.to_view().model_dump()
    assert "citations" not in shown and "image_encoding" not in shown
    assert shown["retrieved_learnings"] == [{"kind": "profile", "learning_id": "p"}]


def test_change_log_view_converts_nested_profiles() -> None:
    profile = UserProfile(
        profile_id="p", user_id="u", content="c", last_modified_timestamp=1,
        generated_from_request_id="r", tags=None,
    )  # fmt: skip
    log = ProfileChangeLog(id=1, user_id="u", request_id="r", added_profiles=[profile],
                           removed_profiles=[])  # fmt: skip
    view = log.to_view()
    assert isinstance(view.added_profiles[0], ProfileView)
    assert view.added_profiles[0].tags == []


def test_unified_search_response_keeps_degraded_present() -> None:
    body = UnifiedSearchViewResponse(success=True).model_dump(mode="json", exclude_none=True)
    assert body["degraded"] is False
    assert body["profiles"] == [] and "search_mode_effective" not in body


def test_models_import_only_pydantic_stdlib_and_themselves() -> None:
    allowed = set(sys.stdlib_module_names) | {"pydantic", "pydantic_core", "__future__"}
    for path in MODELS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                roots = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                roots = [node.module]
            else:
                continue
            for name in roots:
                # reflexio.prompt_text holds the prompt rendering rules, standard library only
                ok = name.split(".")[0] in allowed or name.startswith(
                    ("reflexio.models", "reflexio.prompt_text")
                )
                assert ok, f"{path.name} imports {name}"


def test_package_re_exports_every_public_name() -> None:
    for path in MODELS_DIR.glob("*.py"):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"reflexio.models.{path.stem}")
        missing = set(module.__all__) - set(package.__all__)
        assert not missing, f"{path.stem}: {sorted(missing)}"
