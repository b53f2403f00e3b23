"""Every client method builds the request Reflexio's server expects, sync and async alike."""

from __future__ import annotations

import asyncio
import warnings
from datetime import datetime
from typing import Any

import httpx
import pytest

from reflexio import (
    AsyncReflexioClient,
    Config,
    InteractionData,
    ReflexioClient,
    UnifiedSearchViewResponse,
    UserActionType,
)
from reflexio.client import ListJobsResponse
from reflexio.models import (
    BulkDeleteResponse,
    DeleteUserProfileResponse,
    GetOperationStatusResponse,
    PublishUserInteractionResponse,
    RerunProfileGenerationResponse,
    SetConfigResponse,
)
from tests.client.fake_server import NOW, FakeServer, body

UP = {"user_id": "u1", "agent_version": "v1", "request_id": "r1", "content": "be brief"}
AP = {"agent_version": "v1", "content": "cite sources"}

# name, args, kwargs, HTTP method, path, expected query (or None), expected body subset (or None)
CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], str, str, dict[str, str] | None, Any]] = [
    ("health", (), {}, "GET", "/health", None, None),
    ("version", (), {}, "GET", "/meta/version", None, None),
    ("whoami", (), {}, "GET", "/api/whoami", None, None),
    ("get_usage", (), {}, "GET", "/api/usage", None, None),
    ("get_config", (), {}, "GET", "/api/get_config", None, None),
    (
        "set_config",
        ({"window_size": 4, "stride_size": 2},),
        {},
        "POST",
        "/api/set_config",
        None,
        {"window_size": 4},
    ),
    ("update_config", ({"window_size": 20},), {}, "POST", "/api/update_config", None, {"window_size": 20}),
    ("clear_user_data", ("u1",), {}, "POST", "/api/clear_user_data", None, {"user_id": "u1"}),
    ("export_user_data", ("u1",), {}, "GET", "/api/export_user_data", {"user_id": "u1"}, None),
    ("list_jobs", (), {"status": "dead"}, "GET", "/api/jobs", {"status": "dead", "limit": "100"}, None),
    ("retry_jobs", ([1, 2],), {}, "POST", "/api/jobs/retry", None, {"job_ids": [1, 2]}),
    ("get_learning_status", ("r1",), {}, "GET", "/api/learning_status", {"request_id": "r1"}, None),
    ("finalize_session", ("u1", "s1"), {}, "POST", "/api/finalize_session", None, {"session_id": "s1"}),
    (
        "get_interactions",
        (),
        {"user_id": "u1", "top_k": 3},
        "POST",
        "/api/get_interactions",
        None,
        {"top_k": 3},
    ),
    ("get_all_interactions", (), {"limit": 5}, "GET", "/api/get_all_interactions", {"limit": "5"}, None),
    ("get_requests", (), {"session_id": "s1"}, "POST", "/api/get_requests", None, {"session_id": "s1"}),
    (
        "search_interactions",
        (),
        {"user_id": "u1", "query": "q"},
        "POST",
        "/api/search_interactions",
        None,
        {},
    ),
    (
        "delete_interaction",
        ("u1", 5, True),
        {},
        "DELETE",
        "/api/delete_interaction",
        None,
        {"interaction_id": 5},
    ),
    ("delete_request", ("r1", True), {}, "DELETE", "/api/delete_request", None, {"request_id": "r1"}),
    ("delete_session", ("s1", True), {}, "DELETE", "/api/delete_session", None, {"session_id": "s1"}),
    (
        "delete_requests_by_ids",
        (["r1"],),
        {},
        "DELETE",
        "/api/delete_requests_by_ids",
        None,
        {"request_ids": ["r1"]},
    ),
    ("delete_all_interactions", (), {}, "DELETE", "/api/delete_all_interactions", None, None),
    ("search", (), {"query": "laptop", "user_id": "u1"}, "POST", "/api/search", None, {"query": "laptop"}),
    (
        "add_user_profile",
        ([{"user_id": "u1", "content": "c"}],),
        {},
        "POST",
        "/api/add_user_profile",
        None,
        {},
    ),
    ("get_profiles", (), {"user_id": "u1"}, "POST", "/api/get_profiles", None, {"user_id": "u1"}),
    (
        "get_all_profiles",
        (),
        {"user_id": "u1"},
        "GET",
        "/api/get_all_profiles",
        {"limit": "100", "user_id": "u1"},
        None,
    ),
    (
        "update_user_profile",
        ("u1", "p1"),
        {"content": "new"},
        "PUT",
        "/api/update_user_profile",
        None,
        {"content": "new"},
    ),
    (
        "search_user_profiles",
        (),
        {"user_id": "u1", "query": "q"},
        "POST",
        "/api/search_profiles",
        None,
        {"query": "q"},
    ),
    ("get_profile_change_log", (), {}, "GET", "/api/profile_change_log", None, None),
    ("get_profile_statistics", (), {}, "GET", "/api/get_profile_statistics", None, None),
    (
        "delete_profile",
        ("u1", "p1", "", True),
        {},
        "DELETE",
        "/api/delete_profile",
        None,
        {"profile_id": "p1"},
    ),
    (
        "delete_profiles_by_ids",
        (["p1"],),
        {},
        "DELETE",
        "/api/delete_profiles_by_ids",
        None,
        {"profile_ids": ["p1"]},
    ),
    ("delete_all_profiles", (), {}, "DELETE", "/api/delete_all_profiles", None, None),
    ("add_user_playbook", ([UP],), {}, "POST", "/api/add_user_playbook", None, {}),
    ("add_agent_playbooks", ([AP],), {}, "POST", "/api/add_agent_playbook", None, {}),
    ("get_user_playbooks", (), {"user_id": "u1"}, "POST", "/api/get_user_playbooks", None, {"user_id": "u1"}),
    ("get_agent_playbooks", (), {"limit": 3}, "POST", "/api/get_agent_playbooks", None, {"limit": 3}),
    (
        "update_user_playbook",
        (7,),
        {"content": "x"},
        "PUT",
        "/api/update_user_playbook",
        None,
        {"trigger": None},
    ),
    (
        "update_agent_playbook",
        (3,),
        {"content": "x"},
        "PUT",
        "/api/update_agent_playbook",
        None,
        {"content": "x"},
    ),
    (
        "update_agent_playbook_status",
        (3,),
        {"playbook_status": "approved"},
        "PUT",
        "/api/update_agent_playbook_status",
        None,
        {"agent_playbook_id": 3, "playbook_status": "approved"},
    ),
    ("search_user_playbooks", (), {"query": "q"}, "POST", "/api/search_user_playbooks", None, {"query": "q"}),
    (
        "search_agent_playbooks",
        (),
        {"query": "q"},
        "POST",
        "/api/search_agent_playbooks",
        None,
        {"query": "q"},
    ),
    (
        "delete_user_playbook",
        (7, True),
        {},
        "DELETE",
        "/api/delete_user_playbook",
        None,
        {"user_playbook_id": 7},
    ),
    (
        "delete_agent_playbook",
        (3, True),
        {},
        "DELETE",
        "/api/delete_agent_playbook",
        None,
        {"agent_playbook_id": 3},
    ),
    ("delete_user_playbooks_by_ids", ([7],), {}, "DELETE", "/api/delete_user_playbooks_by_ids", None, {}),
    ("delete_agent_playbooks_by_ids", ([3],), {}, "DELETE", "/api/delete_agent_playbooks_by_ids", None, {}),
    ("delete_all_playbooks", (), {}, "DELETE", "/api/delete_all_playbooks", None, None),
    ("delete_all_user_playbooks", (), {}, "DELETE", "/api/delete_all_user_playbooks", None, None),
    ("delete_all_agent_playbooks", (), {}, "DELETE", "/api/delete_all_agent_playbooks", None, None),
    ("rerun_profile_generation", (), {"user_id": "u1"}, "POST", "/api/rerun_profile_generation", None, {}),
    ("manual_profile_generation", (), {"user_id": "u1"}, "POST", "/api/manual_profile_generation", None, {}),
    ("upgrade_profiles", (), {}, "POST", "/api/upgrade_all_profiles", None, {"only_affected_users": True}),
    (
        "downgrade_profiles",
        (),
        {},
        "POST",
        "/api/downgrade_all_profiles",
        None,
        {"only_affected_users": False},
    ),
    ("rerun_playbook_generation", (), {}, "POST", "/api/rerun_playbook_generation", None, {}),
    ("manual_playbook_generation", (), {}, "POST", "/api/manual_playbook_generation", None, {}),
    ("upgrade_user_playbooks", (), {}, "POST", "/api/upgrade_all_user_playbooks", None, {}),
    ("downgrade_user_playbooks", (), {}, "POST", "/api/downgrade_all_user_playbooks", None, {}),
    ("run_playbook_aggregation", (), {}, "POST", "/api/run_playbook_aggregation", None, {}),
    (
        "submit_playbook_aggregation",
        (),
        {"request_id": "r1", "agent_version": "v1"},
        "POST",
        "/api/playbook_aggregation_operations",
        None,
        {"request_id": "r1", "agent_version": "v1"},
    ),
    (
        "get_playbook_aggregation_operation",
        ("5",),
        {},
        "GET",
        "/api/playbook_aggregation_operations/5",
        None,
        None,
    ),
    (
        "get_playbook_aggregation_change_logs",
        (),
        {"agent_version": "v1"},
        "GET",
        "/api/playbook_aggregation_change_logs",
        {"agent_version": "v1", "playbook_name": "playbook", "limit": "100"},
        None,
    ),
    (
        "get_agent_playbook_review_queue",
        (),
        {"agent_version": "v1", "limit": 20},
        "POST",
        "/api/get_agent_playbook_review_queue",
        None,
        {"agent_version": "v1", "limit": 20},
    ),
    (
        "get_learning_provenance",
        ("user_playbook", 3),
        {},
        "POST",
        "/api/get_learning_provenance",
        None,
        {"kind": "user_playbook", "id": "3"},
    ),
    (
        "update_agent_playbook_status",
        (3,),
        {"playbook_status": "rejected", "expected_status": "pending", "note": "wrong"},
        "PUT",
        "/api/update_agent_playbook_status",
        None,
        {"playbook_status": "rejected", "expected_status": "pending", "note": "wrong"},
    ),
    (
        "get_operation_status",
        ("playbook_generation",),
        {},
        "GET",
        "/api/get_operation_status",
        {"service_name": "playbook_generation"},
        None,
    ),
    (
        "get_agent_success_evaluation_results",
        (),
        {"limit": 5},
        "POST",
        "/api/get_agent_success_evaluation_results",
        None,
        {"limit": 5},
    ),
    (
        "get_retrieved_learning_evaluation_results",
        (),
        {"session_id": "s1"},
        "POST",
        "/api/get_retrieved_learning_evaluation_results",
        None,
        {"session_id": "s1"},
    ),
    (
        "mark_session_outcome",
        (),
        {"session_id": "s1", "outcome": "failure", "occurred_at": NOW, "label": "ticket_reopened"},
        "POST",
        "/api/session_outcome",
        None,
        {"session_id": "s1", "outcome": "failure", "occurred_at": NOW, "label": "ticket_reopened"},
    ),
    (
        "get_session_outcomes",
        (),
        {"session_ids": ["s1"], "include_history": True},
        "POST",
        "/api/get_session_outcomes",
        None,
        {"session_ids": ["s1"], "include_history": True},
    ),
    (
        "grade_on_demand",
        (),
        {"session_id": "s1", "agent_version": "v1"},
        "POST",
        "/api/evaluations/grade_on_demand",
        None,
        {"session_id": "s1", "agent_version": "v1"},
    ),
    (
        "list_shadow_comparisons",
        (5,),
        {},
        "GET",
        "/api/evaluations/shadow_comparisons/recent",
        {"limit": "5"},
        None,
    ),
    (
        "get_evaluation_overview",
        (),
        {"from_ts": 0, "to_ts": NOW, "bucket": "day"},
        "POST",
        "/api/get_evaluation_overview",
        None,
        {"from_ts": 0, "to_ts": NOW, "bucket": "day"},
    ),
    (
        "get_playbook_application_stats",
        (7,),
        {},
        "POST",
        "/api/get_playbook_application_stats",
        None,
        {"days_back": 7},
    ),
    (
        "get_learning_impact",
        ("agent_playbook", ["3"]),
        {},
        "POST",
        "/api/get_learning_impact",
        None,
        {"kind": "agent_playbook", "learning_ids": ["3"]},
    ),
    (
        "get_reflection_actions",
        ("agent_playbook", "3"),
        {"include_reverted": False},
        "POST",
        "/api/get_reflection_actions",
        None,
        {"kind": "agent_playbook", "learning_id": "3", "include_reverted": False},
    ),
    (
        "revert_reflection_action",
        (9,),
        {"note": "back"},
        "POST",
        "/api/revert_reflection_action",
        None,
        {"action_id": 9, "note": "back"},
    ),
    ("list_retrieval_experiments", (), {}, "GET", "/api/retrieval_experiments", None, None),
    (
        "start_retrieval_experiment",
        ("e/1", 10),
        {},
        "POST",
        "/api/retrieval_experiments",
        None,
        {"experiment_id": "e/1", "holdout_percentage": 10.0},
    ),
    (
        "stop_retrieval_experiment",
        ("e/1",),
        {},
        "POST",
        "/api/retrieval_experiments/stop",
        None,
        {"experiment_id": "e/1"},
    ),
    (
        "get_retrieval_experiment_results",
        ("e/1",),
        {},
        "GET",
        "/api/retrieval_experiments/e/1/results",
        None,
        None,
    ),
]


def _check(server: FakeServer, case: tuple[Any, ...], result: Any) -> None:
    name, _, _, method, path, query, expected = case
    request = server.last
    assert (request.method, request.url.path) == (method, path), name
    if query is not None:
        assert dict(request.url.params) == query
    sent = body(request)
    if expected is None:
        assert sent is None, f"{name} sent a body"
    else:
        assert isinstance(sent, dict)
        assert sent.items() >= expected.items(), (name, sent)
    assert result is None or isinstance(result, str) or hasattr(result, "model_dump"), name


def test_cases_cover_every_public_method() -> None:
    public = {name for name in dir(ReflexioClient) if not name.startswith("_")}
    helpers = {"close", "base_url", "api_key", "timeout"}
    helpers |= {"events"}  # a stream, not one request: tests/integrations/test_events.py
    aliases = {"add_agent_playbook", "search_profiles", "publish_interaction", "publish_interaction_async"}
    aliases |= {"search_async"}
    assert public - helpers - aliases == {case[0] for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_sync_request(case: tuple[Any, ...]) -> None:
    server = FakeServer()
    with server.client() as client:
        result = getattr(client, case[0])(*case[1], **case[2])
    _check(server, case, result)


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_async_request(case: tuple[Any, ...]) -> None:
    server = FakeServer()

    async def run() -> Any:
        async with server.async_client() as client:
            return await getattr(client, case[0])(*case[1], **case[2])

    _check(server, case, asyncio.run(run()))


def test_async_client_has_the_same_methods() -> None:
    def methods(cls: type) -> set[str]:
        return {name for name in dir(cls) if not name.startswith("_") and callable(getattr(cls, name))}

    assert methods(ReflexioClient) - {"close"} == methods(AsyncReflexioClient) - {"aclose"}


# -- request building ---------------------------------------------------------------------------


def test_none_keywords_are_dropped_so_model_defaults_apply() -> None:
    server = FakeServer()
    server.client().search(query="q", top_k=None, threshold=None)
    sent = body(server.last)
    assert sent["top_k"] == 5  # the model's default, not null
    assert sent["threshold"] is None
    assert sent["search_mode"] == "hybrid"


def test_datetimes_travel_as_iso_strings() -> None:
    server = FakeServer()
    server.client().get_interactions(user_id="u1", start_time=datetime(2024, 1, 2, 3, 4, 5), end_time=2 * NOW)
    sent = body(server.last)
    assert sent["start_time"] == "2024-01-02T03:04:05Z"
    assert sent["end_time"].startswith("2077-09-")


def test_request_object_and_keywords_merge() -> None:
    server = FakeServer()
    server.client().search({"query": "base", "top_k": 2}, user_id="u1")
    sent = body(server.last)
    assert (sent["query"], sent["top_k"], sent["user_id"]) == ("base", 2, "u1")


def test_invalid_arguments_fail_locally() -> None:
    import pydantic

    server = FakeServer()
    client = server.client()
    with pytest.raises(pydantic.ValidationError):
        client.search(query="   ")
    with pytest.raises(pydantic.ValidationError):
        client.delete_interaction("u1", 0)
    with pytest.raises(TypeError):
        client.update_config(["window_size"])  # type: ignore[arg-type]
    assert server.requests == []


def test_search_returns_a_response_that_renders_a_prompt() -> None:
    result = FakeServer().client().search(query="laptop", user_id="u1")
    assert isinstance(result, UnifiedSearchViewResponse)
    block = result.to_prompt(max_tokens=1000)
    kinds = {learning.kind for learning in block.retrieved_learnings}
    assert kinds == {"profile", "user_playbook", "agent_playbook"}
    assert "likes light laptops" in block.text


def test_get_all_profiles_sends_only_given_filters() -> None:
    server = FakeServer()
    server.client().get_all_profiles(limit=10, status_filter="", start_time=5, include_tombstones=True)
    assert dict(server.last.url.params) == {"limit": "10", "start_time": "5", "include_tombstones": "true"}


def test_get_profiles_accepts_status_strings_and_current() -> None:
    server = FakeServer()
    server.client().get_profiles(
        user_id="u1", status_filter=["current", None, "archived"], force_refresh=True
    )
    assert body(server.last)["status_filter"] == [None, None, "archived"]


def test_add_user_profile_fills_bookkeeping_of_dicts() -> None:
    server = FakeServer()
    server.client().add_user_profile([{"user_id": "u1", "content": "vegetarian"}])
    (profile,) = body(server.last)["user_profiles"]
    assert profile["profile_id"].startswith("cli-")
    assert profile["generated_from_request_id"] == "cli-manual"
    assert profile["last_modified_timestamp"] > NOW


def test_set_config_sends_a_config_model_in_full() -> None:
    server = FakeServer()
    result = server.client().set_config(Config(window_size=4, stride_size=2))
    sent = body(server.last)
    assert sent["window_size"] == 4
    assert "storage_config" in sent
    assert isinstance(result, SetConfigResponse)


def test_get_config_ignores_unknown_keys() -> None:
    config = FakeServer().client().get_config()
    assert isinstance(config, Config)
    assert (config.window_size, config.stride_size) == (12, 6)


def test_list_jobs_is_typed() -> None:
    answer = FakeServer().client().list_jobs()
    assert isinstance(answer, ListJobsResponse)
    assert answer.jobs[0].status == "dead"


# -- publish ---------------------------------------------------------------------------------------


def test_publish_requires_a_session_before_sending() -> None:
    server = FakeServer()
    with pytest.raises(ValueError, match="session_id"):
        server.client().publish_interaction("u1", [{"content": "hi"}], session_id="  ")
    assert server.requests == []


def test_publish_body_and_wait_flag() -> None:
    server = FakeServer()
    client = server.client()
    turns: list[InteractionData | dict[str, Any]] = [
        InteractionData(role="User", content="hi", user_action=UserActionType.NONE),
        {
            "role": "Agent",
            "content": "hello",
            "retrieved_learnings": [{"kind": "profile", "learning_id": "p1"}],
        },
    ]
    result = client.publish_interaction("u1", turns, session_id="s1", source="app")
    assert isinstance(result, PublishUserInteractionResponse)
    assert "wait_for_response" not in server.last.url.params
    sent = body(server.last)
    assert sent["agent_version"] == "agent-v0"
    assert sent["request_id"] is None
    assert sent["interaction_data_list"][1]["retrieved_learnings"] == [
        {"kind": "profile", "learning_id": "p1"}
    ]
    client.publish_interaction("u1", turns, session_id="s1", wait_for_response=True, request_id="mine")
    assert server.last.url.params["wait_for_response"] == "true"
    assert body(server.last)["request_id"] == "mine"


def test_publish_reports_what_was_stripped_locally() -> None:
    server = FakeServer()
    turns = [{"role": "User", "Content": "typo"}, {"role": "User", "content": "ok", "user_id": "u1"}]
    result = server.client().publish_interaction("u1", turns, session_id="s1")
    sent = body(server.last)
    assert len(sent["interaction_data_list"]) == 1  # the empty (mis-keyed) turn never leaves
    assert any("Content" in warning for warning in result.warnings)
    assert any("skipped 1 empty" in warning for warning in result.warnings)
    assert not any("user_id" in warning for warning in result.warnings)


def test_sync_client_coroutines_work_from_an_event_loop() -> None:
    server = FakeServer()
    client = server.client()

    async def run() -> tuple[Any, Any]:
        found = await client.search_async(query="laptop")
        published = await client.publish_interaction_async("u1", [{"content": "hi"}], session_id="s1")
        return found, published

    found, published = asyncio.run(run())
    assert isinstance(found, UnifiedSearchViewResponse)
    assert published.request_id == "r1"
    assert [request.url.path for request in server.requests] == ["/api/search", "/api/publish_interaction"]


# -- answers that are not returned -----------------------------------------------------------------


def test_deletes_without_waiting_still_send_and_return_none() -> None:
    server = FakeServer()
    assert server.client().delete_profile("u1", "p1") is None
    assert server.last.url.path == "/api/delete_profile"
    answer = server.client().delete_profile("u1", "p1", wait_for_response=True)
    assert isinstance(answer, DeleteUserProfileResponse)


def test_deletes_without_waiting_still_raise() -> None:
    from reflexio import NotFoundError

    body404 = {
        "success": False,
        "error": "not_found",
        "detail": "no such profile",
        "message": "no such profile",
    }
    server = FakeServer({("DELETE", "/api/delete_profile"): httpx.Response(404, json=body404)})
    with pytest.raises(NotFoundError, match="no such profile"):
        server.client().delete_profile("u1", "p1")


def test_manual_generation_returns_none_after_sending() -> None:
    server = FakeServer()
    assert server.client().manual_profile_generation(user_id="u1") is None
    assert server.last.url.path == "/api/manual_profile_generation"


def test_bulk_delete_is_typed() -> None:
    assert isinstance(FakeServer().client().delete_all_profiles(), BulkDeleteResponse)


# -- rerun polling -----------------------------------------------------------------------------------


def _operation(status: str, started_at: int) -> httpx.Response:
    info = {
        "service_name": "profile_generation",
        "status": status,
        "started_at": started_at,
        "processed_users": 4,
    }
    return httpx.Response(200, json={"success": True, "operation_status": info})


def test_rerun_waits_for_the_operation(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from reflexio.client import _generation

    monkeypatch.setattr(_generation, "POLL_SECONDS", 0.0)
    polls = iter(
        [
            _operation("completed", 1),  # a stale run from long ago
            _operation("in_progress", int(time.time())),
            _operation("completed", int(time.time())),
        ]
    )
    server = FakeServer({("GET", "/api/get_operation_status"): lambda _request: next(polls)})
    result = server.client().rerun_profile_generation(user_id="u1", wait_for_response=True)
    assert isinstance(result, RerunProfileGenerationResponse)
    assert (result.success, result.profiles_generated) == (True, 4)
    paths = [request.url.path for request in server.requests]
    assert paths == ["/api/rerun_profile_generation"] + ["/api/get_operation_status"] * 3


def test_rerun_gives_up_polling_with_the_first_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    from reflexio.client import _generation

    monkeypatch.setattr(_generation, "POLL_SECONDS", 0.0)
    monkeypatch.setattr(_generation, "POLL_LIMIT_SECONDS", 0.0)
    server = FakeServer({("GET", "/api/get_operation_status"): httpx.Response(503, json={"detail": "busy"})})
    result = server.client().rerun_profile_generation(wait_for_response=True)
    assert result is not None
    assert result.success
    assert result.msg is None  # the server's first answer, as Reflexio's client returned it


def test_rerun_async_polls_too(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from reflexio.client import _generation

    monkeypatch.setattr(_generation, "POLL_SECONDS", 0.0)
    server = FakeServer(
        {("GET", "/api/get_operation_status"): lambda _request: _operation("failed", int(time.time()))}
    )

    async def run() -> Any:
        async with server.async_client() as client:
            return await client.rerun_playbook_generation(wait_for_response=True)

    result = asyncio.run(run())
    assert result is not None
    assert not result.success


def test_operation_status_is_typed() -> None:
    answer = FakeServer().client().get_operation_status()
    assert isinstance(answer, GetOperationStatusResponse)
    assert answer.operation_status is not None


def test_search_profiles_is_a_deprecated_alias() -> None:
    server = FakeServer()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        server.client().search_profiles(user_id="u1", query="q")
    assert any(issubclass(warning.category, DeprecationWarning) for warning in caught)
    assert server.last.url.path == "/api/search_profiles"


def test_an_experiment_id_is_one_path_segment() -> None:
    server = FakeServer()
    with server.client() as client:
        client.get_retrieval_experiment_results("e/1")
    assert server.last.url.raw_path == b"/api/retrieval_experiments/e%2F1/results"
