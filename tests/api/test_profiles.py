"""Profiles over HTTP: add, read with Reflexio's filter defaults, edit, search, log, delete."""

from __future__ import annotations

import time
from typing import Any

from starlette.testclient import TestClient

from reflexio.filters import LearningFilter
from reflexio.records import Audit, LearningKind, LearningStatus
from reflexio.service.core import Core
from tests.api.support import failed, ok, profile


def add(client: TestClient, *profiles: dict[str, Any]) -> dict[str, Any]:
    return ok(client.post("/api/add_user_profile", json={"user_profiles": list(profiles)}))


def get(client: TestClient, **body: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ok(client.post("/api/get_profiles", json={"user_id": "u1", **body}))[
        "user_profiles"
    ]
    return found


def set_status(core: Core, profile_id: str, status: LearningStatus) -> None:
    where = LearningFilter(kinds=(LearningKind.PROFILE,), profile_ids=(profile_id,))
    core.storage.update_learnings("self-host-org", where, {"status": status}, Audit(actor="test"))


def test_add_then_get_with_current_and_unexpired_default(client: TestClient, core: Core) -> None:
    now = int(time.time())
    body = add(
        client,
        profile("p1", "prefers aisle seats", tags=["travel"]),
        profile("p2", "lives in Lyon", profile_time_to_live="one_day", last_modified_timestamp=now - 90_000),
        profile("p3", "old fact"),
        profile("p4", "someone else", user_id="u2"),
    )
    assert body["added_count"] == 4
    set_status(core, "p3", LearningStatus.ARCHIVED)
    shown = get(client)
    assert [p["profile_id"] for p in shown] == ["p1"]  # p2 expired, p3 archived, p4 another user
    assert shown[0]["tags"] == ["travel"] and "status" not in shown[0]  # current = null, omitted
    assert {p["profile_id"] for p in get(client, status_filter=["archived"])} == {"p3"}
    assert {p["profile_id"] for p in get(client, status_filter=[None, "archived"])} == {"p1", "p2", "p3"}
    assert get(client, profile_id="p1")[0]["content"] == "prefers aisle seats"
    assert get(client, tags=["nope"]) == []
    assert [p["profile_id"] for p in get(client, status_filter=[None], profile_time_to_live="one_day")] == [
        "p2"
    ]
    failed(client.post("/api/get_profiles", json={"user_id": "u1", "profile_time_to_live": "forever"}), 422)


def test_a_reused_profile_id_is_409(client: TestClient) -> None:
    add(client, profile("p1", "a fact"))
    failed(client.post("/api/add_user_profile", json={"user_profiles": [profile("p1", "another")]}), 409)
    failed(client.post("/api/add_user_profile", json={"user_profiles": [profile("p9", "")]}), 422)


def test_get_all_profiles_query_parameters(client: TestClient, core: Core) -> None:
    add(
        client, profile("p1", "likes tea"), profile("p2", "likes coffee", user_id="u2"), profile("p3", "gone")
    )
    set_status(core, "p3", LearningStatus.SUPERSEDED)
    every = ok(client.get("/api/get_all_profiles"))["user_profiles"]
    assert {p["profile_id"] for p in every} == {"p1", "p2"}
    with_tombstones = ok(client.get("/api/get_all_profiles", params={"include_tombstones": "true"}))
    assert {p["profile_id"] for p in with_tombstones["user_profiles"]} == {"p1", "p2", "p3"}
    assert [
        p["profile_id"]
        for p in ok(client.get("/api/get_all_profiles", params={"user_id": "u2"}))["user_profiles"]
    ] == ["p2"]
    assert (
        ok(client.get("/api/get_all_profiles", params={"status_filter": "archived"}))["user_profiles"] == []
    )
    assert len(ok(client.get("/api/get_all_profiles", params={"limit": 1}))["user_profiles"]) == 1
    window: dict[str, str | int] = {
        "start_time": 1_699_999_999,
        "end_time": 1_700_000_001,
        "date_field": "created_at",
    }
    assert len(ok(client.get("/api/get_all_profiles", params=window))["user_profiles"]) == 2
    failed(client.get("/api/get_all_profiles", params={"status_filter": "current-ish"}), 422)
    failed(client.get("/api/get_all_profiles", params={"date_field": "nope"}), 422)


def test_update_re_embeds_and_refreshes_full_text(client: TestClient) -> None:
    add(client, profile("p1", "enjoys hiking in the alps"))
    body = {"user_id": "u1", "profile_id": "p1", "content": "collects vintage vinyl records"}
    ok(client.put("/api/update_user_profile", json=body))
    search = {"user_id": "u1", "query": "vinyl records collection", "threshold": 0.0}
    hits = ok(client.post("/api/search_profiles", json=search))["user_profiles"]
    assert hits and hits[0]["profile_id"] == "p1" and hits[0]["score"] > 0
    fts = {"user_id": "u1", "query": "hiking", "search_mode": "fts"}
    assert ok(client.post("/api/search_profiles", json=fts))["user_profiles"] == []
    failed(client.put("/api/update_user_profile", json={**body, "user_id": "u2"}), 404)
    assert ok(client.put("/api/update_user_profile", json={"user_id": "u1", "profile_id": "p1"}))["msg"]


def test_search_profiles_has_scores_and_respects_threshold(client: TestClient) -> None:
    add(client, profile("p1", "allergic to peanuts"), profile("p2", "drives a red car"))
    hits = ok(client.post("/api/search_profiles", json={"user_id": "u1", "query": "peanut allergy"}))
    assert hits["user_profiles"][0]["profile_id"] == "p1" and hits["user_profiles"][0]["score"] > 0
    strict = {"user_id": "u1", "query": "peanut allergy", "threshold": 1.0}
    assert ok(client.post("/api/search_profiles", json=strict))["user_profiles"] == []


def test_statistics_count_by_state(client: TestClient, core: Core) -> None:
    now = int(time.time())
    add(
        client,
        profile("p1", "a"),
        profile("p2", "b", profile_time_to_live="one_day", last_modified_timestamp=now),
        profile("p3", "c"),
        profile("p4", "d"),
    )
    set_status(core, "p3", LearningStatus.ARCHIVED)
    set_status(core, "p4", LearningStatus.PENDING)
    stats = ok(client.get("/api/get_profile_statistics"))
    assert (stats["current_count"], stats["archived_count"], stats["pending_count"]) == (2, 1, 1)
    assert stats["expiring_soon_count"] == 1


def test_change_log_is_rebuilt_from_history(client: TestClient) -> None:
    add(client, profile("p1", "likes jazz"))
    ok(
        client.put(
            "/api/update_user_profile", json={"user_id": "u1", "profile_id": "p1", "content": "likes blues"}
        )
    )
    ok(client.request("DELETE", "/api/delete_profile", json={"user_id": "u1", "profile_id": "p1"}))
    logs = ok(client.get("/api/profile_change_log"))["profile_change_logs"]
    added = [p["content"] for log in logs for p in log["added_profiles"]]
    removed = [p["content"] for log in logs for p in log["removed_profiles"]]
    assert sorted(added) == ["likes blues", "likes jazz"]
    assert sorted(removed) == ["likes blues", "likes jazz"]
    assert all(log["user_id"] == "u1" for log in logs)


def test_delete_profile_by_id_and_404(client: TestClient) -> None:
    add(client, profile("p1", "a fact"))
    failed(client.request("DELETE", "/api/delete_profile", json={"user_id": "u2", "profile_id": "p1"}), 404)
    ok(client.request("DELETE", "/api/delete_profile", json={"user_id": "u1", "profile_id": "p1"}))
    failed(client.request("DELETE", "/api/delete_profile", json={"user_id": "u1", "profile_id": "p1"}), 404)
    failed(client.request("DELETE", "/api/delete_profile", json={"user_id": "u1"}), 422)


def test_delete_profile_by_search_query_really_deletes(client: TestClient) -> None:
    add(
        client,
        profile("p1", "is vegetarian and avoids meat"),
        profile("p2", "works as a nurse at night"),
        profile("p3", "vegetarian diet", user_id="u2"),
    )
    body = {"user_id": "u1", "search_query": "vegetarian"}
    message = ok(client.request("DELETE", "/api/delete_profile", json=body))["message"]
    assert message.startswith("Deleted 1 profile")
    assert [p["profile_id"] for p in get(client)] == ["p2"]
    assert len(ok(client.post("/api/get_profiles", json={"user_id": "u2"}))["user_profiles"]) == 1


def test_bulk_profile_deletes_count(client: TestClient) -> None:
    add(client, profile("p1", "a"), profile("p2", "b"), profile("p3", "c", user_id="u2"))
    body = ok(client.request("DELETE", "/api/delete_profiles_by_ids", json={"profile_ids": ["p1", "nope"]}))
    assert body["deleted_count"] == 1
    assert ok(client.request("DELETE", "/api/delete_all_profiles"))["deleted_count"] == 2
    assert ok(client.get("/api/get_all_profiles"))["user_profiles"] == []
