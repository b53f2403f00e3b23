"""The per-learning holdout and the retrieval experiment, end to end over HTTP.

Search withholds a learning from exactly the sessions the hash names and records every
decision; the learning's lift compares the sessions it was served in with those it was
withheld from; an experiment's arms follow the user hash and its lift and clustered interval
are the reference computation's (``learn.stats``, itself checked against statsmodels).
"""

from __future__ import annotations

from starlette.testclient import TestClient

from reflexio.learn.holdout import experiment_arm, withheld
from reflexio.learn.stats import clustered_difference
from reflexio.service.core import Core
from tests.api.support import agent_playbook, failed, ok, turn
from tests.api.test_evaluation import outcome, run_due_evaluations

ORG = "self-host-org"
RULE = "When a parcel is late, apologise and give the tracking link."
SESSIONS = 24


def _rule(client: TestClient) -> str:
    body = {"agent_playbooks": [agent_playbook(RULE, playbook_status="approved")]}
    ok(client.post("/api/add_agent_playbook", json=body))
    (found,) = ok(client.post("/api/get_agent_playbooks", json={}))["agent_playbooks"]
    return str(found["agent_playbook_id"])


def _search(client: TestClient, user: str, session: str) -> list[str]:
    body = {"query": "my parcel is late", "user_id": user, "session_id": session, "agent_version": "v1"}
    found = ok(client.post("/api/search", json=body))
    return [str(p["agent_playbook_id"]) for p in found.get("agent_playbooks", [])]


def _session(client: TestClient, user: str, session: str, served: list[str], result: str) -> None:
    refs = [{"kind": "agent_playbook", "learning_id": i} for i in served]
    turns = [
        turn("My parcel is late."),
        turn("Sorry, here is the link.", role="Agent", retrieved_learnings=refs),
    ]
    body = {"user_id": user, "session_id": session, "agent_version": "v1", "interaction_data_list": turns}
    ok(client.post("/api/publish_interaction", json=body))
    ok(client.post("/api/session_outcome", json=outcome(session, result, user_id=user)))


def test_search_withholds_exactly_the_hashed_sessions_and_the_lift_compares_them(
    client: TestClient, core: Core
) -> None:
    ok(client.post("/api/update_config", json={"holdout_rate": 0.3, "holdout_warmup_seconds": 0}))
    rule = _rule(client)
    expected = {f"s{i}": withheld(ORG, "agent_playbook", rule, f"s{i}", 0.3) for i in range(SESSIONS)}
    assert 0 < sum(expected.values()) < SESSIONS  # both arms are present at this rate
    success: dict[str, bool] = {}
    for i, session in enumerate(expected):
        user = f"u{i % 8}"
        served = _search(client, user, session)
        assert (served == []) is expected[session], session
        success[session] = bool(served) or i % 3 == 0  # withheld sessions mostly fail
        _session(client, user, session, served, "success" if success[session] else "failure")
    decisions = core.storage.learning_exposures(ORG, "agent_playbook", [rule])
    assert {d.session_id: d.withheld for d in decisions} == expected
    run_due_evaluations(core)
    body = {"kind": "agent_playbook", "learning_ids": [rule]}
    (impact,) = ok(client.post("/api/get_learning_impact", json=body))["impacts"]
    assert impact["sessions_withheld"] == sum(expected.values())
    reference = clustered_difference(
        [float(success[s]) for s in expected],
        [not expected[s] for s in expected],
        [f"u{i % 8}" for i in range(SESSIONS)],
    )
    lift = impact["lift"]
    assert lift["value"] == round(reference.value, 6) and lift["users"] == 8
    assert (lift["low"], lift["high"]) == (round(reference.low or 0, 6), round(reference.high or 0, 6))


def test_a_learning_younger_than_the_warmup_is_always_served(client: TestClient, core: Core) -> None:
    """A fresh install or a newly taught lesson is not a coin flip: the holdout starts later."""
    ok(client.post("/api/update_config", json={"holdout_rate": 0.5}))
    rule = _rule(client)
    sessions = [f"s{i}" for i in range(SESSIONS)]
    assert any(withheld(ORG, "agent_playbook", rule, s, 0.5) for s in sessions)  # it would be
    assert all(_search(client, "u1", s) == [rule] for s in sessions)
    decisions = core.storage.learning_exposures(ORG, "agent_playbook", [rule])
    assert len(decisions) == SESSIONS
    assert all(not d.withheld and d.holdout_rate == 0.0 for d in decisions)  # not randomised


def test_an_experiment_splits_users_by_hash_and_reports_the_clustered_lift(
    client: TestClient, core: Core
) -> None:
    ok(client.post("/api/update_config", json={"holdout_rate": 0}))
    rule = _rule(client)
    ok(client.post("/api/retrieval_experiments", json={"experiment_id": "exp-1", "holdout_percentage": 40}))
    users = [f"user{i}" for i in range(12)]
    arm = {u: experiment_arm("exp-1", u, 40) for u in users}
    assert set(arm.values()) == {"treatment", "holdout"}
    y, treated, groups = [], [], []
    for u in users:
        for k in range(2):
            session = f"{u}-s{k}"
            served = _search(client, u, session)
            assert (served == [rule]) is (arm[u] == "treatment"), u
            good = arm[u] == "treatment" or k == 0
            _session(client, u, session, served, "success" if good else "failure")
            y.append(float(good))
            treated.append(arm[u] == "treatment")
            groups.append(u)
    run_due_evaluations(core)
    results = ok(client.get("/api/retrieval_experiments/exp-1/results"))
    reference = clustered_difference(y, treated, groups)
    assert results["holdout"]["assigned_user_count"] == sum(a == "holdout" for a in arm.values())
    assert results["success_rate_lift_percentage_points"] == round(100 * reference.value, 4)
    low, high = results["confidence_interval_95_percentage_points"]
    assert (low, high) == (round(100 * (reference.low or 0), 4), round(100 * (reference.high or 0), 4))


def test_an_experiment_id_with_a_slash_reaches_its_results(client: TestClient) -> None:
    ok(
        client.post(
            "/api/retrieval_experiments", json={"experiment_id": "team/exp 2", "holdout_percentage": 10}
        )
    )
    for path in ("team%2Fexp%202", "team/exp 2"):  # as the SDK sends it (quote, safe=""), and raw
        results = ok(client.get(f"/api/retrieval_experiments/{path}/results"))
        assert results["experiment"]["experiment_id"] == "team/exp 2"
    failed(client.get("/api/retrieval_experiments/team%2Fother/results"), 404)


def test_an_experiment_id_of_only_dots_is_refused_naming_the_field(client: TestClient) -> None:
    body = failed(
        client.post("/api/retrieval_experiments", json={"experiment_id": "..", "holdout_percentage": 10}), 422
    )
    assert "experiment_id" in str(body)
    assert ok(client.get("/api/retrieval_experiments")).get("experiments", []) == []
