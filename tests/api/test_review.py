"""Reviewing agent playbooks over HTTP: legal and illegal transitions, races, audit, revocation."""

from __future__ import annotations

import threading
from typing import Any

from starlette.testclient import TestClient

from reflexio.service import keys
from reflexio.service.core import Core
from tests.api.support import agent_playbook, failed, make_client, ok

ORG = "self-host-org"
STATUS = "/api/update_agent_playbook_status"


def _add(client: TestClient, content: str, **fields: Any) -> int:
    ok(client.post("/api/add_agent_playbook", json={"agent_playbooks": [agent_playbook(content, **fields)]}))
    rows = ok(client.post("/api/get_agent_playbooks", json={}))["agent_playbooks"]
    return int(max(r["agent_playbook_id"] for r in rows))


def _served(client: TestClient, pid: int) -> bool:
    body = {"query": "refund order number", "entity_types": ["agent_playbooks"], "threshold": 0.0}
    return pid in {
        r["agent_playbook_id"] for r in ok(client.post("/api/search", json=body))["agent_playbooks"]
    }


def test_each_decision_is_audited_with_who_and_the_note(client: TestClient, core: Core) -> None:
    pid = _add(client, "Ask for the order number before a refund")
    ok(
        client.put(
            STATUS, json={"agent_playbook_id": pid, "playbook_status": "approved", "note": "matches policy"}
        )
    )
    ok(
        client.put(
            "/api/update_agent_playbook",
            json={"agent_playbook_id": pid, "content": "Confirm the order number before any refund"},
        )
    )
    ok(
        client.put(
            STATUS, json={"agent_playbook_id": pid, "playbook_status": "rejected", "note": "legal said no"}
        )
    )
    events = core.storage.list_events(ORG, learning_ids=[pid])
    assert [e.event for e in events] == ["rejected", "updated", "approved", "created"]
    assert {e.actor for e in events[:3]} == {"local"}
    assert events[0].reason == "rejected by a reviewer: legal said no"
    assert events[2].reason == "approved by a reviewer: matches policy"
    assert (
        events[1].before is not None
        and events[1].before["content"] == "Ask for the order number before a refund"
    )


def test_rejection_and_revocation_leave_retrieval_at_once(client: TestClient) -> None:
    pid = _add(client, "Ask for the order number before a refund", playbook_status="approved")
    assert _served(client, pid)
    ok(client.put(STATUS, json={"agent_playbook_id": pid, "playbook_status": "rejected"}))  # revocation
    assert not _served(client, pid)
    ok(client.put(STATUS, json={"agent_playbook_id": pid, "playbook_status": "pending"}))  # reopened
    assert _served(client, pid)


def test_illegal_transitions_are_409_naming_the_current_state(client: TestClient) -> None:
    pid = _add(client, "Ask for the order number before a refund", playbook_status="approved")
    body = failed(client.put(STATUS, json={"agent_playbook_id": pid, "playbook_status": "approved"}), 409)
    assert body["details"] == {"agent_playbook_id": pid, "action": "approve", "current_state": "approved"}
    ok(client.request("DELETE", "/api/delete_agent_playbook", json={"agent_playbook_id": pid}))
    edit = {"agent_playbook_id": pid, "content": "new words"}
    body = failed(client.put("/api/update_agent_playbook", json=edit), 409)
    assert body["details"]["current_state"] == "deleted" and "it was deleted" in body["message"]
    failed(client.put(STATUS, json={"agent_playbook_id": pid, "playbook_status": "approved"}), 409)
    failed(client.put(STATUS, json={"agent_playbook_id": 99_999, "playbook_status": "approved"}), 404)
    rejected = _add(client, "Never refund without a receipt", playbook_status="rejected")
    body = failed(
        client.put("/api/update_agent_playbook", json={"agent_playbook_id": rejected, "content": "x"}), 409
    )
    assert body["details"]["current_state"] == "rejected"


def test_a_decision_on_a_state_that_moved_is_refused(client: TestClient) -> None:
    pid = _add(client, "Ask for the order number before a refund")
    approve = {"agent_playbook_id": pid, "playbook_status": "approved", "expected_status": "pending"}
    reject = {"agent_playbook_id": pid, "playbook_status": "rejected", "expected_status": "pending"}
    ok(client.put(STATUS, json=approve))
    body = failed(client.put(STATUS, json=reject), 409)
    assert body["details"]["current_state"] == "approved" and "not pending as expected" in body["message"]


def _decide(client: TestClient, body: dict[str, Any], start: threading.Barrier, codes: list[int]) -> None:
    start.wait()
    codes.append(client.put(STATUS, json=body).status_code)


def test_concurrent_approve_and_reject_one_wins(client: TestClient, core: Core) -> None:
    """Both reviewers saw it pending; whatever order the store serialises them in, one loses."""
    for _ in range(3):
        pid = _add(client, "Ask for the order number before a refund")
        bodies = [
            {"agent_playbook_id": pid, "playbook_status": status, "expected_status": "pending"}
            for status in ("approved", "rejected")
        ]
        codes: list[int] = []
        start = threading.Barrier(2)
        threads = [threading.Thread(target=_decide, args=(client, b, start, codes)) for b in bodies]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(codes) == [200, 409]
        decided = [e.event for e in core.storage.list_events(ORG, learning_ids=[pid])]
        assert decided.count("approved") + decided.count("rejected") == 1
        assert decided.count("refused") == 1  # the history shows both attempts


def test_only_a_reviewer_key_may_decide_over_rest(app: Any, core: Core) -> None:
    """A plain key may propose and edit text; approving, rejecting or adding decided ones is a 403."""
    _, plain = keys.create_key(core, ORG, "agent")
    _, reviewer = keys.create_key(core, ORG, "lead", reviewer=True)
    agent, lead = make_client(app, key=plain), make_client(app, key=reviewer)
    pid = _add(agent, "Ask for the order number before a refund")
    for method, path, body in [
        ("PUT", STATUS, {"agent_playbook_id": pid, "playbook_status": "approved"}),
        ("PUT", "/api/update_agent_playbook", {"agent_playbook_id": pid, "playbook_status": "rejected"}),
        (
            "POST",
            "/api/add_agent_playbook",
            {"agent_playbooks": [agent_playbook("x", playbook_status="approved")]},
        ),
    ]:
        refused = failed(agent.request(method, path, json=body), 403)
        assert "reflexio keys create --reviewer" in refused["message"] and refused["details"]["action"]
    assert _states(agent) == {pid: "pending"}  # nothing was changed or added
    ok(
        agent.put(
            "/api/update_agent_playbook", json={"agent_playbook_id": pid, "content": "Confirm the order"}
        )
    )
    ok(lead.put(STATUS, json={"agent_playbook_id": pid, "playbook_status": "approved"}))
    assert _states(agent) == {pid: "approved"}


def _states(client: TestClient) -> dict[int, str]:
    rows = ok(client.post("/api/get_agent_playbooks", json={}))["agent_playbooks"]
    return {int(r["agent_playbook_id"]): str(r["playbook_status"]) for r in rows}
