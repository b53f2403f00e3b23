"""``POST /api/get_learning_provenance``: from a learning down to its interactions."""

from __future__ import annotations

from starlette.testclient import TestClient

from reflexio.filters import InteractionFilter
from reflexio.service.core import Core
from tests.api.support import failed, ok, user_playbook

ORG = "self-host-org"


def _publish(client: TestClient) -> str:
    body = {
        "user_id": "u1",
        "session_id": "s1",
        "interaction_data_list": [
            {"role": "User", "content": "Refund my blender"},
            {"role": "Agent", "content": "Refund issued."},
            {"role": "User", "content": "Wrong order! Ask for the order number first."},
        ],
    }
    return str(ok(client.post("/api/publish_interaction", json=body))["request_id"])


def test_a_user_playbook_leads_to_its_request_and_interactions(client: TestClient, core: Core) -> None:
    request_id = _publish(client)
    turns = core.storage.list_interactions(ORG, InteractionFilter(request_ids=(request_id,)))
    cited = [t.id for t in turns[1:]]
    rule = {**user_playbook("ask for the order number before refunding"), "request_id": request_id}
    rule["source_interaction_ids"] = cited
    ok(client.post("/api/add_user_playbook", json={"user_playbooks": [rule]}))
    [row] = ok(client.post("/api/get_user_playbooks", json={}))["user_playbooks"]
    asked = {"kind": "user_playbook", "id": str(row["user_playbook_id"])}
    body = ok(client.post("/api/get_learning_provenance", json=asked))
    assert body["provenance_status"] == "exact" and body["trigger_request_id"] == request_id
    assert [t["interaction_id"] for t in body["source_interactions"]] == cited
    assert body["distinct_users"] == 1
    ok(
        client.request(
            "DELETE", "/api/delete_interaction", json={"user_id": "u1", "interaction_id": cited[0]}
        )
    )
    body = ok(client.post("/api/get_learning_provenance", json=asked))
    assert body["provenance_status"] == "best_effort" and len(body["source_interactions"]) == 1


def test_unknown_learnings_are_404_and_hand_written_ones_unavailable(client: TestClient) -> None:
    failed(client.post("/api/get_learning_provenance", json={"kind": "user_playbook", "id": "999"}), 404)
    failed(client.post("/api/get_learning_provenance", json={"kind": "profile", "id": "nope"}), 404)
    failed(client.post("/api/get_learning_provenance", json={"kind": "agent_playbook", "id": "x"}), 404)
    failed(client.post("/api/get_learning_provenance", json={"kind": "habit", "id": "1"}), 422)
    fact = {
        "profile_id": "p-oslo",
        "user_id": "u1",
        "content": "Lives in Oslo",
        "last_modified_timestamp": 1_700_000_000,
        "generated_from_request_id": "manual",
    }
    ok(client.post("/api/add_user_profile", json={"user_profiles": [fact]}))
    [profile] = ok(client.post("/api/get_profiles", json={"user_id": "u1"}))["user_profiles"]
    body = ok(
        client.post("/api/get_learning_provenance", json={"kind": "profile", "id": profile["profile_id"]})
    )
    assert body["provenance_status"] == "unavailable" and body["source_interactions"] == []
