"""User and agent playbooks over HTTP: add, read, edit (re-embedded), review, delete."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.testclient import TestClient

from reflexio.filters import LearningFilter
from reflexio.records import Audit, LearningKind, LearningStatus
from reflexio.service.core import Core
from tests.api.support import agent_playbook, failed, ok, user_playbook


def add_user(client: TestClient, *rules: dict[str, Any]) -> list[int]:
    ok(client.post("/api/add_user_playbook", json={"user_playbooks": list(rules)}))
    rows = ok(client.post("/api/get_user_playbooks", json={}))["user_playbooks"]
    return sorted(r["user_playbook_id"] for r in rows)


def add_agent(client: TestClient, *rules: dict[str, Any]) -> list[int]:
    body = ok(client.post("/api/add_agent_playbook", json={"agent_playbooks": list(rules)}))
    assert body["added_count"] == len(rules)
    rows = ok(client.post("/api/get_agent_playbooks", json={}))["agent_playbooks"]
    return sorted(r["agent_playbook_id"] for r in rows)


def search_agent(client: TestClient, query: str) -> list[int]:
    body = {"query": query, "entity_types": ["agent_playbooks"], "threshold": 0.0}
    return [r["agent_playbook_id"] for r in ok(client.post("/api/search", json=body))["agent_playbooks"]]


def test_user_playbooks_default_to_every_non_tombstone_state(client: TestClient, core: Core) -> None:
    ids = add_user(
        client,
        user_playbook("confirm dates before booking", trigger="booking travel"),
        user_playbook("keep answers short", user_id="u2"),
        user_playbook("an old rule"),
    )
    where = LearningFilter(kinds=(LearningKind.USER_PLAYBOOK,), ids=(ids[2],))
    core.storage.update_learnings("self-host-org", where, {"status": LearningStatus.SUPERSEDED}, Audit())
    shown = ok(client.post("/api/get_user_playbooks", json={}))["user_playbooks"]
    assert sorted(r["user_playbook_id"] for r in shown) == ids[:2]
    assert [
        r["user_id"]
        for r in ok(client.post("/api/get_user_playbooks", json={"user_id": "u2"}))["user_playbooks"]
    ] == ["u2"]
    tomb = ok(client.post("/api/get_user_playbooks", json={"status_filter": ["superseded"]}))[
        "user_playbooks"
    ]
    assert [r["user_playbook_id"] for r in tomb] == [ids[2]]
    one = ok(client.post("/api/get_user_playbooks", json={"user_playbook_id": ids[0]}))["user_playbooks"]
    assert one[0]["trigger"] == "booking travel" and one[0]["tags"] == []
    failed(client.post("/api/add_user_playbook", json={"user_playbooks": [user_playbook("")]}), 422)


def test_update_user_playbook_re_embeds(client: TestClient) -> None:
    [pid] = add_user(client, user_playbook("greet the user warmly"))
    ok(
        client.put(
            "/api/update_user_playbook", json={"user_playbook_id": pid, "content": "escalate refund disputes"}
        )
    )
    body = {
        "query": "refund dispute",
        "user_id": "u1",
        "entity_types": ["user_playbooks"],
        "search_mode": "fts",
    }
    hits = ok(client.post("/api/search", json=body))["user_playbooks"]
    assert [h["user_playbook_id"] for h in hits] == [pid] and hits[0]["score"] > 0
    stale = {**body, "query": "greet warmly"}
    assert ok(client.post("/api/search", json=stale))["user_playbooks"] == []
    failed(client.put("/api/update_user_playbook", json={"user_playbook_id": pid + 100, "content": "x"}), 404)
    failed(client.put("/api/update_user_playbook", json={"user_playbook_id": pid, "content": ""}), 422)


def test_agent_playbooks_review_and_retrieval(client: TestClient, core: Core) -> None:
    ids = add_agent(
        client,
        agent_playbook("cite the source of every price quote"),
        agent_playbook("offer a discount code to angry customers", playbook_status="approved"),
    )
    assert sorted(search_agent(client, "price quote source discount customers")) == ids
    body = {"agent_playbook_id": ids[0], "playbook_status": "rejected"}
    assert ok(client.put("/api/update_agent_playbook_status", json=body))["success"] is True
    assert search_agent(client, "price quote source discount customers") == [ids[1]]
    asked = {"query": "price quote", "agent_playbook_status_filter": ["rejected"], "threshold": 0.0}
    assert ok(client.post("/api/search", json=asked))["agent_playbooks"] == []  # rejected never served
    listed = ok(client.post("/api/get_agent_playbooks", json={"playbook_status_filter": "rejected"}))
    assert [r["agent_playbook_id"] for r in listed["agent_playbooks"]] == [ids[0]]
    history = core.storage.list_events("self-host-org", learning_ids=[ids[0]])
    assert history[0].event == "rejected" and history[0].actor == "local" and "rejected" in history[0].reason
    failed(client.put("/api/update_agent_playbook_status", json={**body, "agent_playbook_id": 999}), 404)
    failed(client.put("/api/update_agent_playbook_status", json={**body, "playbook_status": "maybe"}), 422)


def test_update_agent_playbook_edits_text_and_review_together(client: TestClient) -> None:
    [pid] = add_agent(client, agent_playbook("always say hello"))
    body = {
        "agent_playbook_id": pid,
        "content": "verify identity before account changes",
        "playbook_status": "approved",
    }
    ok(client.put("/api/update_agent_playbook", json=body))
    [row] = ok(client.post("/api/get_agent_playbooks", json={}))["agent_playbooks"]
    assert row["content"] == body["content"] and row["playbook_status"] == "approved"
    assert search_agent(client, "verify identity account") == [pid]
    failed(client.put("/api/update_agent_playbook", json={**body, "agent_playbook_id": pid + 1}), 404)


def test_get_agent_playbooks_defaults_to_current(client: TestClient, core: Core) -> None:
    ids = add_agent(client, agent_playbook("rule one"), agent_playbook("rule two", agent_version="v2"))
    where = LearningFilter(kinds=(LearningKind.AGENT_PLAYBOOK,), ids=(ids[0],))
    core.storage.update_learnings("self-host-org", where, {"status": LearningStatus.ARCHIVED}, Audit())
    assert [
        r["agent_playbook_id"]
        for r in ok(client.post("/api/get_agent_playbooks", json={}))["agent_playbooks"]
    ] == [ids[1]]
    archived = ok(client.post("/api/get_agent_playbooks", json={"status_filter": ["archived"]}))
    assert [r["status"] for r in archived["agent_playbooks"]] == ["archived"]
    assert ok(client.post("/api/get_agent_playbooks", json={"agent_version": "v1"}))["agent_playbooks"] == []


def test_per_kind_playbook_searches(client: TestClient) -> None:
    add_user(client, user_playbook("double check the shipping address"))
    add_agent(client, agent_playbook("double check the shipping address before dispatch"))
    body = {"query": "shipping address", "threshold": 0.0}
    assert ok(client.post("/api/search_user_playbooks", json=body))["user_playbooks"][0]["score"] > 0
    assert ok(client.post("/api/search_agent_playbooks", json=body))["agent_playbooks"][0]["score"] > 0


@pytest.mark.parametrize("kind", ["user", "agent"])
def test_single_deletes_and_their_404(client: TestClient, kind: str) -> None:
    """A second delete is a 404 for a user playbook; an agent playbook's history says it was
    deleted, so it is a 409 naming that state (as any action on a deleted one is)."""
    ids = add_user(client, user_playbook("a")) if kind == "user" else add_agent(client, agent_playbook("a"))
    path, field = f"/api/delete_{kind}_playbook", f"{kind}_playbook_id"
    ok(client.request("DELETE", path, json={field: ids[0]}))
    again = failed(client.request("DELETE", path, json={field: ids[0]}), 404 if kind == "user" else 409)
    if kind == "agent":
        assert again["details"]["current_state"] == "deleted"
        failed(client.request("DELETE", path, json={field: 99_999}), 404)
    failed(client.request("DELETE", path, json={field: 0}), 422)


def test_bulk_playbook_deletes_count(client: TestClient) -> None:
    users = add_user(client, user_playbook("a"), user_playbook("b"))
    agents = add_agent(client, agent_playbook("c"), agent_playbook("d"), agent_playbook("e"))
    body = {"user_playbook_ids": [users[0], 99_999]}
    assert ok(client.request("DELETE", "/api/delete_user_playbooks_by_ids", json=body))["deleted_count"] == 1
    body = {"agent_playbook_ids": agents[:2]}
    assert ok(client.request("DELETE", "/api/delete_agent_playbooks_by_ids", json=body))["deleted_count"] == 2
    assert ok(client.request("DELETE", "/api/delete_all_user_playbooks"))["deleted_count"] == 1
    assert ok(client.request("DELETE", "/api/delete_all_agent_playbooks"))["deleted_count"] == 1
    add_user(client, user_playbook("f"))
    add_agent(client, agent_playbook("g"))
    assert ok(client.request("DELETE", "/api/delete_all_playbooks"))["deleted_count"] == 2
