"""``POST /api/search``: kinds, review filter, scope, scores, session dedup, ``degraded``."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from tests.api.support import agent_playbook, failed, ok, profile, user_playbook


def seed(client: TestClient) -> None:
    ok(
        client.post(
            "/api/add_user_profile",
            json={"user_profiles": [profile("p1", "prefers vegetarian restaurants", tags=["food"])]},
        )
    )
    ok(
        client.post(
            "/api/add_user_playbook",
            json={"user_playbooks": [user_playbook("suggest vegetarian restaurants first", source="web")]},
        )
    )
    ok(
        client.post(
            "/api/add_agent_playbook",
            json={
                "agent_playbooks": [
                    agent_playbook("list vegetarian restaurant options", playbook_status="approved"),
                    agent_playbook("mention vegetarian restaurant menus"),
                    agent_playbook("never recommend vegetarian restaurants", playbook_status="rejected"),
                ]
            },
        )
    )


def search(client: TestClient, **body: Any) -> dict[str, Any]:
    return ok(client.post("/api/search", json={"query": "vegetarian restaurants", "threshold": 0.0, **body}))


def test_all_kinds_with_scores_and_degraded_present(client: TestClient) -> None:
    seed(client)
    out = search(client, user_id="u1")
    assert out["degraded"] is False
    assert [p["profile_id"] for p in out["profiles"]] == ["p1"]
    assert len(out["user_playbooks"]) == 1 and len(out["agent_playbooks"]) == 2
    every = [*out["profiles"], *out["user_playbooks"], *out["agent_playbooks"]]
    assert all(0 < hit["score"] <= 1 for hit in every)
    assert {p["playbook_status"] for p in out["agent_playbooks"]} == {"approved", "pending"}


def test_profiles_need_a_user_and_entity_types_select_kinds(client: TestClient) -> None:
    seed(client)
    assert search(client)["profiles"] == []
    out = search(client, user_id="u1", entity_types=["profiles"])
    assert len(out["profiles"]) == 1 and out["user_playbooks"] == [] and out["agent_playbooks"] == []


def test_review_filter_and_scope_filters(client: TestClient) -> None:
    seed(client)
    approved = search(client, agent_playbook_status_filter=["approved"])["agent_playbooks"]
    assert [p["playbook_status"] for p in approved] == ["approved"]
    assert search(client, agent_version="v9")["agent_playbooks"] == []
    assert (
        search(client, user_id="u1", source="web")["user_playbooks"]
        and search(client, user_id="u1", source="app")["user_playbooks"] == []
    )
    assert (
        search(client, user_id="u1", tags=["food"])["profiles"]
        and search(client, user_id="u1", tags=["x"])["profiles"] == []
    )


def test_threshold_and_top_k(client: TestClient) -> None:
    seed(client)
    assert len(search(client, top_k=1)["agent_playbooks"]) == 1
    strict = search(client, user_id="u1", threshold=1.0)
    assert strict["profiles"] == strict["user_playbooks"] == strict["agent_playbooks"] == []


def test_session_dedup_serves_a_learning_once_unless_asked(client: TestClient) -> None:
    seed(client)
    first = search(client, user_id="u1", session_id="chat-1", entity_types=["profiles"])
    assert len(first["profiles"]) == 1
    assert search(client, user_id="u1", session_id="chat-1", entity_types=["profiles"])["profiles"] == []
    again = search(
        client, user_id="u1", session_id="chat-1", entity_types=["profiles"], include_already_served=True
    )
    assert len(again["profiles"]) == 1
    assert len(search(client, user_id="u1", session_id="chat-2", entity_types=["profiles"])["profiles"]) == 1


def test_search_modes_and_validation(client: TestClient) -> None:
    seed(client)
    for mode in ("fts", "vector", "hybrid"):
        assert search(client, search_mode=mode)["agent_playbooks"], mode
    failed(client.post("/api/search", json={"query": "  "}), 422)
    failed(client.post("/api/search", json={"query": "x", "entity_types": ["people"]}), 422)
    failed(client.post("/api/search", json={"query": "x", "top_k": 101}), 422)


def test_user_scoped_learnings_are_served_only_to_their_user(client: TestClient) -> None:
    ok(
        client.post(
            "/api/add_user_playbook",
            json={
                "user_playbooks": [
                    user_playbook("book vegetarian restaurants for Ana", user_id="ana"),
                    user_playbook("book vegetarian restaurants near Ben's office", user_id="ben"),
                ]
            },
        )
    )
    profiles = [profile("p-ana", "likes vegetarian restaurants", user_id="ana")]
    ok(client.post("/api/add_user_profile", json={"user_profiles": profiles}))
    anonymous = search(client)
    assert anonymous["user_playbooks"] == [] and anonymous["profiles"] == []
    ben = search(client, user_id="ben")
    assert [p["user_id"] for p in ben["user_playbooks"]] == ["ben"] and ben["profiles"] == []
    ana = search(client, user_id="ana")
    assert [p["user_id"] for p in ana["user_playbooks"]] == ["ana"]
    assert [p["profile_id"] for p in ana["profiles"]] == ["p-ana"]
