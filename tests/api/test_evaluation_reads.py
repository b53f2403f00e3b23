"""Grading on demand, application stats and impact reads over HTTP, on every backend."""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from reflexio.filters import InteractionFilter
from reflexio.service.core import Core
from tests.api.support import failed, ok, turn

GRADE = "/api/evaluations/grade_on_demand"


def _publish(client: TestClient, session: str, *turns: dict[str, Any]) -> None:
    body = {
        "user_id": "u1",
        "session_id": session,
        "agent_version": "v1",
        "interaction_data_list": list(turns),
    }
    ok(client.post("/api/publish_interaction", json=body))


def test_a_graded_session_is_cached_until_a_new_turn_arrives(client: TestClient) -> None:
    assert ok(client.post(GRADE, json={"session_id": "nothing-here", "agent_version": "v1"})) == {
        "session_id": "nothing-here",
        "skipped_reason": "NO_REQUESTS",
        "cached": False,
    }
    _publish(client, "s1", turn("Where is my parcel?"), turn("It ships tomorrow.", role="Agent"))
    first = ok(client.post(GRADE, json={"session_id": "s1", "agent_version": "v1"}))
    assert first["result_id"] and not first.get("cached")
    again = ok(client.post(GRADE, json={"session_id": "s1", "agent_version": "v1"}))
    assert (again["result_id"], again["cached"]) == (first["result_id"], True)

    # A turn published right after the grade (within the same second) is news: judged again.
    _publish(client, "s1", turn("Wrong, it was due yesterday. Check the order first next time."))
    regraded = ok(client.post(GRADE, json={"session_id": "s1", "agent_version": "v1"}))
    assert not regraded.get("cached") and regraded["result_id"] != first["result_id"]
    (verdict,) = ok(client.post("/api/get_agent_success_evaluation_results", json={}))[
        "agent_success_evaluation_results"
    ]
    assert verdict["is_success"] is False and verdict["number_of_correction_per_session"] == 1


def test_with_evaluation_off_nothing_is_graded(client: TestClient) -> None:
    config = ok(client.get("/api/get_config"))
    ok(client.post("/api/set_config", json={**config, "agent_success_config": None}))
    _publish(client, "s1", turn("Hello"), turn("Hi!", role="Agent"))
    graded = ok(client.post(GRADE, json={"session_id": "s1", "agent_version": "v1"}))
    assert graded == {"session_id": "s1", "skipped_reason": "EVALUATION_DISABLED", "cached": False}


def test_application_stats_count_each_citation_with_the_learning_it_names(
    client: TestClient, core: Core
) -> None:
    ok(
        client.post(
            "/api/add_user_playbook",
            json={
                "user_playbooks": [
                    {
                        "user_id": "u1",
                        "agent_version": "v1",
                        "request_id": "manual",
                        "content": "Quote in euros.",
                    }
                ]
            },
        )
    )
    (rule,) = ok(client.post("/api/get_user_playbooks", json={"user_id": "u1"}))["user_playbooks"]
    rule_id = str(rule["user_playbook_id"])
    cite = [{"kind": "playbook", "real_id": rule_id}]  # the legacy kind: a user playbook
    _publish(client, "s1", turn("Price?"), turn("It is 10 euros.", role="Agent", citations=cite))
    _publish(client, "s2", turn("And shipping?"), turn("4 euros.", role="Agent", citations=cite))

    stats = ok(client.post("/api/get_playbook_application_stats", json={"days_back": 30}))["stats"]
    (stat,) = stats
    assert (stat["kind"], stat["real_id"], stat["applied_count"]) == ("user_playbook", rule_id, 2)
    assert stat["title"] == "Quote in euros." and stat["last_applied_at"] > 0
    newest = core.storage.list_interactions("self-host-org", InteractionFilter(), limit=1, newest_first=True)[
        0
    ]
    assert stat["last_interaction_id"] == newest.id


def test_impact_of_named_learnings_needs_their_kind(client: TestClient) -> None:
    refused = failed(client.post("/api/get_learning_impact", json={"learning_ids": ["1"]}), 422)
    assert "kind is required" in refused["message"] and refused["details"]["fields"] == ["kind"]
    assert ok(client.post("/api/get_learning_impact", json={}))["impacts"] == []
