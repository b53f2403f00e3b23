"""Publish, learning status, reading and deleting the log, through HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from reflexio.models import Config
from reflexio.service.core import Core
from tests.api.support import failed, ok, profile, publish_body, turn


def publish(client: TestClient, body: dict[str, Any], **params: Any) -> dict[str, Any]:
    return ok(client.post("/api/publish_interaction", json=body, params=params))


def test_publish_is_idempotent_on_request_id(client: TestClient) -> None:
    body = publish_body("I prefer window seats", request_id="req-1")
    first = publish(client, body)
    second = publish(client, body)
    assert first["request_id"] == second["request_id"] == "req-1"
    assert "nothing new" in second["message"] and "nothing new" not in first["message"]
    stored = ok(client.post("/api/get_requests", json={"user_id": "u1"}))["sessions"]
    assert [r["request"]["request_id"] for r in stored[0]["requests"]] == ["req-1"]
    assert len(ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]) == 1


def test_a_reused_request_id_with_another_payload_is_409_naming_the_field(client: TestClient) -> None:
    publish(client, publish_body("first", "same", request_id="req-1"))
    body = failed(
        client.post("/api/publish_interaction", json=publish_body("second", "same", request_id="req-1")), 409
    )
    assert "req-1" in body["detail"] and "interaction_data_list[0].content" in body["detail"]
    assert body["details"]["fields"] == ["interaction_data_list[0].content"]
    moved = failed(
        client.post(
            "/api/publish_interaction",
            json=publish_body("first", "same", request_id="req-1", session_id="s2", agent_version="v9"),
        ),
        409,
    )
    assert moved["details"]["fields"] == ["session_id", "agent_version"]
    shorter = failed(
        client.post("/api/publish_interaction", json=publish_body("first", request_id="req-1")), 409
    )
    assert "interaction_data_list (has 1 turns, stored 2)" in shorter["detail"]


def test_a_retry_is_judged_on_what_the_caller_sent_not_on_defaults(client: TestClient) -> None:
    """Defaults sent explicitly, a created_at the server filled, flags: still the same request."""
    publish(client, publish_body("hello", request_id="req-1"))
    explicit = publish_body("hello", request_id="req-1", source="", agent_version="", force_extraction=True)
    explicit["interaction_data_list"][0] |= {"user_action": "none", "tools_used": [], "expert_content": ""}
    assert "nothing new" in publish(client, explicit)["message"]
    stored = ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"][0]
    same_time = publish_body(request_id="req-1")
    same_time["interaction_data_list"] = [turn("hello", created_at=stored["created_at"])]
    assert "nothing new" in publish(client, same_time)["message"]
    other_time = publish_body(request_id="req-1")
    other_time["interaction_data_list"] = [turn("hello", created_at=stored["created_at"] - 3600)]
    body = failed(client.post("/api/publish_interaction", json=other_time), 409)
    assert body["details"]["fields"] == ["interaction_data_list[0].created_at"]


def test_without_request_id_the_server_assigns_one(client: TestClient) -> None:
    out = publish(client, publish_body("hello"))
    assert out["success"] is True and out["request_id"] and out["learning_status"] in {"done", "deferred"}
    assert "warnings" not in out or out["warnings"] == []


def test_caller_created_at_and_free_form_roles_are_kept(client: TestClient) -> None:
    body = publish_body()
    body["interaction_data_list"] = [
        turn("book me a flight", created_at=1_600_000_000),
        turn("done", role="Agent", created_at=1_600_000_001),
        turn("anything else?", role="Assistant", created_at=1_600_000_002),
    ]
    publish(client, body)
    shown = ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]
    assert [(t["role"], t["created_at"]) for t in reversed(shown)] == [
        ("User", 1_600_000_000),
        ("Agent", 1_600_000_001),
        ("Assistant", 1_600_000_002),
    ]


def test_unknown_fields_and_empty_turns_are_reported(client: TestClient) -> None:
    body = publish_body("real content", sesion="typo")
    body["interaction_data_list"].append({"role": "Assistant", "content": ""})
    body["interaction_data_list"].append({"Content": "mis-keyed", "user_id": "u1"})
    warnings = publish(client, body)["warnings"]
    assert any("interaction_data_list[2]" in w and "Content" in w for w in warnings)
    assert any("sesion" in w for w in warnings)
    assert any("skipped 2 empty interaction(s)" in w and "1, 2" in w for w in warnings)
    assert not any("user_id" in w for w in warnings)
    assert len(ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]) == 1


def test_an_all_empty_publish_is_422_naming_the_typo(client: TestClient) -> None:
    body = publish_body()
    body["interaction_data_list"] = [{"Content": "mis-keyed"}]
    detail = failed(client.post("/api/publish_interaction", json=body), 422)["detail"]
    assert "every interaction is empty" in detail and "Content" in detail


def test_learning_status_of_known_and_unknown_requests(client: TestClient) -> None:
    publish(client, publish_body("hello", request_id="req-1"))
    status = ok(client.get("/api/learning_status", params={"request_id": "req-1"}))["status"]
    assert status in {"pending", "processing", "done", "failed", "not_tracked"}
    failed(client.get("/api/learning_status", params={"request_id": "nope"}), 404)


def test_wait_for_response_reports_the_settled_status(client: TestClient, core: Core) -> None:
    waited = publish(client, publish_body("hello"), wait_for_response="true")
    assert waited["learning_status"] == "deferred" and waited["learning_reason"]  # no worker runs here
    core.storage.put_org_config(
        "self-host-org",
        Config(profile_extractor_config=None, user_playbook_extractor_config=None).model_dump(mode="json"),
    )
    assert publish(client, publish_body("again"), wait_for_response="true")["learning_status"] == "done"


def test_finalize_session_is_accepted(client: TestClient) -> None:
    publish(client, publish_body("hello"))
    body = ok(client.post("/api/finalize_session", json={"user_id": "u1", "session_id": "s1"}))
    assert body["success"] is True and body["accepted"] is True


def test_get_interactions_filters_by_user_and_time(client: TestClient) -> None:
    for i, user in enumerate(["u1", "u1", "u2"]):
        body = publish_body(user_id=user)
        body["interaction_data_list"] = [turn(f"turn {i}", created_at=1_600_000_000 + i * 100)]
        publish(client, body)
    mine = ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]
    assert [t["content"] for t in mine] == ["turn 1", "turn 0"]
    window = {"user_id": "u1", "start_time": 1_600_000_050, "end_time": "2020-09-13T12:30:00Z"}
    assert [t["content"] for t in ok(client.post("/api/get_interactions", json=window))["interactions"]] == [
        "turn 1"
    ]
    assert (
        len(ok(client.post("/api/get_interactions", json={"user_id": "u1", "top_k": 1}))["interactions"]) == 1
    )
    failed(client.post("/api/get_interactions", json={**window, "end_time": 1_500_000_000}), 422)
    every = ok(client.get("/api/get_all_interactions", params={"limit": 2}))["interactions"]
    assert [t["content"] for t in every] == ["turn 2", "turn 1"]


def test_get_requests_pages_by_session_with_an_exact_has_more(client: TestClient) -> None:
    for s in range(3):
        for r in range(2):
            body = publish_body(f"s{s} r{r}", session_id=f"s{s}", request_id=f"s{s}-r{r}")
            body["interaction_data_list"][0]["created_at"] = 1_600_000_000 + s * 10 + r
            publish(client, body)
    first = ok(client.post("/api/get_requests", json={"user_id": "u1", "top_k": 2}))
    assert [s["session_id"] for s in first["sessions"]] == ["s2", "s1"] and first["has_more"] is True
    assert [r["request"]["request_id"] for r in first["sessions"][0]["requests"]] == ["s2-r0", "s2-r1"]
    assert first["sessions"][0]["requests"][1]["interactions"][0]["content"] == "s2 r1"
    last = ok(client.post("/api/get_requests", json={"user_id": "u1", "top_k": 2, "offset": 2}))
    assert [s["session_id"] for s in last["sessions"]] == ["s0"] and last["has_more"] is False
    exact = ok(client.post("/api/get_requests", json={"user_id": "u1", "top_k": 3}))
    assert exact["has_more"] is False
    one = ok(client.post("/api/get_requests", json={"session_id": "s1"}))["sessions"]
    assert [s["session_id"] for s in one] == ["s1"] and len(one[0]["requests"]) == 2


def test_search_interactions_by_text(client: TestClient) -> None:
    publish(client, publish_body("the invoice is overdue", "shipping takes a week", request_id="r1"))
    publish(client, publish_body("invoice please", user_id="u2"))
    hits = ok(client.post("/api/search_interactions", json={"user_id": "u1", "query": "invoice"}))
    assert [t["content"] for t in hits["interactions"]] == ["the invoice is overdue"]
    newest = ok(client.post("/api/search_interactions", json={"user_id": "u1", "most_recent_k": 1}))
    assert [t["content"] for t in newest["interactions"]] == ["shipping takes a week"]
    recent_only = {"user_id": "u1", "query": "invoice", "most_recent_k": 1}
    assert ok(client.post("/api/search_interactions", json=recent_only))["interactions"] == []


def test_delete_interaction_and_its_404(client: TestClient) -> None:
    publish(client, publish_body("one", "two"))
    turns = ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]
    target = turns[0]["interaction_id"]
    failed(
        client.request("DELETE", "/api/delete_interaction", json={"user_id": "u2", "interaction_id": target}),
        404,
    )
    ok(client.request("DELETE", "/api/delete_interaction", json={"user_id": "u1", "interaction_id": target}))
    failed(
        client.request("DELETE", "/api/delete_interaction", json={"user_id": "u1", "interaction_id": target}),
        404,
    )
    assert len(ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]) == 1


def test_deleting_a_request_removes_its_interactions(client: TestClient) -> None:
    publish(client, publish_body("one", "two", request_id="r1"))
    publish(client, publish_body("three", request_id="r2"))
    ok(client.request("DELETE", "/api/delete_request", json={"request_id": "r1"}))
    left = ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]
    assert [t["content"] for t in left] == ["three"]
    failed(client.request("DELETE", "/api/delete_request", json={"request_id": "r1"}), 404)


def test_delete_session_reports_the_real_count(client: TestClient) -> None:
    for r in ("a", "b"):
        publish(client, publish_body(r, session_id="gone", request_id=r))
    publish(client, publish_body("stays", session_id="kept"))
    body = ok(client.request("DELETE", "/api/delete_session", json={"session_id": "gone"}))
    assert body["deleted_requests_count"] == 2
    failed(client.request("DELETE", "/api/delete_session", json={"session_id": "gone"}), 404)
    assert [
        t["content"] for t in ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]
    ] == ["stays"]


def test_bulk_deletes_count_what_really_went(client: TestClient) -> None:
    for r in ("a", "b", "c"):
        publish(client, publish_body(r, request_id=r))
    body = ok(
        client.request("DELETE", "/api/delete_requests_by_ids", json={"request_ids": ["a", "b", "zzz"]})
    )
    assert body["deleted_count"] == 2
    failed(client.request("DELETE", "/api/delete_requests_by_ids", json={"request_ids": []}), 422)
    assert ok(client.request("DELETE", "/api/delete_all_interactions"))["deleted_count"] == 1
    assert ok(client.get("/api/get_all_interactions"))["interactions"] == []


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/delete_interaction", {"user_id": "u1", "interaction_id": 0}),
        ("/api/delete_request", {"request_id": "  "}),
        ("/api/delete_session", {}),
    ],
)
def test_delete_bodies_are_validated(client: TestClient, path: str, body: dict[str, Any]) -> None:
    failed(client.request("DELETE", path, json=body), 422)


def test_unknown_retrieved_learnings_are_stored_with_a_warning(client: TestClient) -> None:
    ok(client.post("/api/add_user_profile", json={"user_profiles": [profile("p-mine", "likes tea")]}))
    other = profile("p-theirs", "likes coffee", user_id="u2")
    ok(client.post("/api/add_user_profile", json={"user_profiles": [other]}))
    refs = [
        {"kind": "profile", "learning_id": "p-mine"},
        {"kind": "profile", "learning_id": "p-typo"},
        {"kind": "profile", "learning_id": "p-theirs"},
        {"kind": "user_playbook", "learning_id": "not-a-number"},
        {"kind": "agent_playbook", "learning_id": "999999"},
    ]
    body = publish_body("hi")
    body["interaction_data_list"] = [
        turn("", role="Assistant"),  # dropped as empty: indices stay those the caller sent
        turn("answer", role="Agent", retrieved_learnings=refs),
    ]
    warnings = publish(client, body)["warnings"]
    (line,) = [w for w in warnings if "retrieved_learnings" in w]
    assert line.startswith("interaction_data_list[1].retrieved_learnings")
    for named in ("'p-typo'", "'p-theirs' (another user's)", "'not-a-number'", "'999999'"):
        assert named in line, line
    assert "p-mine" not in line
    shown = ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"]
    assert [r["learning_id"] for r in shown[0]["retrieved_learnings"]] == [r["learning_id"] for r in refs]


def test_known_retrieved_learnings_raise_no_warning(client: TestClient) -> None:
    ok(client.post("/api/add_user_profile", json={"user_profiles": [profile("p-mine", "likes tea")]}))
    body = publish_body()
    body["interaction_data_list"] = [
        turn("answer", role="Agent", retrieved_learnings=[{"kind": "profile", "learning_id": "p-mine"}])
    ]
    assert publish(client, body).get("warnings", []) == []


def test_a_publish_flag_this_server_cannot_act_on_is_422(client: TestClient) -> None:
    body = failed(
        client.post("/api/publish_interaction", json=publish_body("hi", override_learning_stall=True)), 422
    )
    assert "override_learning_stall is not supported" in body["detail"]
    assert body["details"]["fields"] == ["override_learning_stall"]
    assert ok(client.post("/api/get_interactions", json={"user_id": "u1"}))["interactions"] == []
    publish(client, publish_body("hi", override_learning_stall=False))  # the default is fine
