"""Session outcomes, judgement and reflection over HTTP, on every backend.

No worker runs here: the tests run the session-idle job's handler themselves (the same code a
worker runs), so each step is visible.
"""

from __future__ import annotations

import time
from typing import Any

from starlette.testclient import TestClient

from reflexio.filters import InteractionFilter, LearningFilter
from reflexio.jobs import JobContext
from reflexio.records import Approval, Audit, JobStatus, Learning, LearningKind, LearningStatus
from reflexio.service import keys
from reflexio.service import publish as pub
from reflexio.service.core import Core
from reflexio.service.impact import impacts
from reflexio.service.overview import learning_impacts
from reflexio.service.reflection import REVISE
from reflexio.service.workers import handlers
from reflexio.testing import rules_script
from reflexio.web import with_dashboard
from tests.api.support import agent_playbook, failed, make_client, ok, publish_body, turn, user_playbook

EXPRESS = "Apologise and offer a free express shipping upgrade on their next order."


def run_due_evaluations(core: Core) -> int:
    """Run every queued session-idle job now, as a worker would; how many ran."""
    handle = handlers(core)[pub.EVALUATE_SESSION]
    ran = 0
    for job in core.storage.list_jobs(
        "self-host-org", task=pub.EVALUATE_SESSION, statuses=[JobStatus.QUEUED]
    ):
        core.storage.expedite_job("self-host-org", job.task, job.key or "")
        (claimed,) = core.storage.claim_jobs("test", limit=1, lease_seconds=60, tasks=[job.task])
        handle(JobContext(claimed, core.storage, "test", 60))
        ran += 1
    return ran


def outcome(session: str, result: str = "failure", **extra: Any) -> dict[str, Any]:
    return {"session_id": session, "outcome": result, "occurred_at": 1_700_000_100, **extra}


def test_an_outcome_for_an_unknown_session_is_a_404(client: TestClient) -> None:
    response = client.post("/api/session_outcome", json=outcome("never-published"))
    assert response.status_code == 404, response.text
    assert "never-published" in response.text


def test_a_malformed_outcome_is_a_422_naming_the_field(client: TestClient) -> None:
    ok(client.post("/api/publish_interaction", json=publish_body("hi", session_id="s1")))
    for body, field in [
        ({**outcome("s1"), "outcome": "great"}, "outcome"),
        ({**outcome("s1"), "occurred_at": -5}, "occurred_at"),
        ({**outcome("s1"), "label": "x" * 129}, "label"),
        ({**outcome("s1"), "metadata": {"blob": "x" * 17_000}}, "metadata"),
        ({"outcome": "success", "occurred_at": 1}, "session_id"),
    ]:
        response = client.post("/api/session_outcome", json=body)
        assert response.status_code == 422, (field, response.text)
        assert field in response.text, (field, response.text)


def test_a_second_report_is_a_new_revision_and_the_history_is_kept(client: TestClient) -> None:
    ok(client.post("/api/publish_interaction", json=publish_body("hi", session_id="s1")))
    first = ok(client.post("/api/session_outcome", json=outcome("s1", "failure", label="ticket_open")))
    second = ok(client.post("/api/session_outcome", json=outcome("s1", "success", label="ticket_closed")))
    assert (first["outcome_revision"], second["outcome_revision"]) == (1, 2) and second["recorded"]
    latest = ok(client.post("/api/get_session_outcomes", json={"session_ids": ["s1"]}))["session_outcomes"]
    assert [(o["outcome"], o["outcome_revision"]) for o in latest] == [("success", 2)]
    history = ok(
        client.post("/api/get_session_outcomes", json={"session_ids": ["s1"], "include_history": True})
    )
    assert [(o["outcome_revision"], o.get("superseded", False)) for o in history["session_outcomes"]] == [
        (2, False),
        (1, True),
    ]


def test_the_outcome_limits_of_the_read(client: TestClient) -> None:
    too_many = {"session_ids": [f"s{i}" for i in range(101)]}
    assert client.post("/api/get_session_outcomes", json=too_many).status_code == 422
    assert client.post("/api/get_session_outcomes", json={"top_k": 1001}).status_code == 422


def _harmful_session(client: TestClient, user: str, playbook_id: int, reply: str) -> None:
    interactions = [
        turn("My parcel is three days late, where is it?"),
        turn(
            "Sorry! I've added a free express shipping upgrade to your next order.",
            role="Agent",
            retrieved_learnings=[{"kind": "agent_playbook", "learning_id": str(playbook_id)}],
        ),
        turn(reply),
    ]
    body = {
        "user_id": user,
        "session_id": f"{user}-s1",
        "agent_version": "v1",
        "interaction_data_list": interactions,
    }
    ok(client.post("/api/publish_interaction", json=body))
    ok(client.post("/api/session_outcome", json=outcome(f"{user}-s1", "failure")))


def _seed(client: TestClient, core: Core) -> int:
    ok(
        client.post(
            "/api/add_agent_playbook",
            json={"agent_playbooks": [agent_playbook(EXPRESS, playbook_status="approved")]},
        )
    )
    (row,) = core.storage.list_learnings("self-host-org", LearningFilter(), limit=5)
    return row.id


REPLIES = [
    "That express upgrade doesn't exist. Please stop offering it.",
    "The store says there is no free express offer any more. Why did you promise it?",
    "Stop promising free express shipping, that offer ended.",
]


def test_a_learning_that_keeps_hurting_is_retired_with_its_evidence_and_can_be_restored(
    app: Any, client: TestClient, core: Core
) -> None:
    playbook = _seed(client, core)
    for i, reply in enumerate(REPLIES[:2]):
        _harmful_session(client, f"d{i}", playbook, reply)
    assert run_due_evaluations(core) == 2
    verdicts = ok(client.post("/api/get_retrieved_learning_evaluation_results", json={}))["results"]
    assert {v["impact"] for v in verdicts} == {"negative"} and len(verdicts) == 2
    assert ok(client.post("/api/get_reflection_actions", json={}))["actions"] == []  # two are not enough
    _harmful_session(client, "d9", playbook, REPLIES[2])
    run_due_evaluations(core)
    (action,) = ok(client.post("/api/get_reflection_actions", json={}))["actions"]
    assert (action["action"], action["status_after"], action["evidence"]["hurt"]) == ("retire", "retired", 3)
    assert (
        core.storage.get_learnings("self-host-org", LearningFilter(ids=(playbook,)))[0].status
        is LearningStatus.RETIRED
    )
    search = ok(client.post("/api/search", json={"query": "my delivery is late", "agent_version": "v1"}))
    assert search.get("agent_playbooks", []) == []
    impact = ok(
        client.post(
            "/api/get_learning_impact", json={"kind": "agent_playbook", "learning_ids": [str(playbook)]}
        )
    )
    (record,) = impact["impacts"]
    assert (record["hurt"], record["helped"], record["sessions_served"]) == (3, 0, 3)
    assert record["help_rate"]["high"] < 0.6
    listed = ok(client.post("/api/get_agent_playbooks", json={"status_filter": ["retired"]}))
    assert [p["impact"]["hurt"] for p in listed["agent_playbooks"]] == [3]
    export = ok(client.get("/api/export_user_data", params={"user_id": "d0"}))
    assert [o["outcome"] for o in export["session_outcomes"]] == ["failure"]
    _, plain = keys.create_key(core, "self-host-org", "agent")
    _, reviewer = keys.create_key(core, "self-host-org", "lead", reviewer=True)
    agent, lead = make_client(app, key=plain), make_client(app, key=reviewer)
    undo = {"action_id": action["action_id"], "note": "policy is back"}
    refused = failed(agent.post("/api/revert_reflection_action", json=undo), 403)
    assert refused["details"]["action"] == "reverting a reflection action"
    assert (
        core.storage.get_learnings("self-host-org", LearningFilter(ids=(playbook,)))[0].status
        is LearningStatus.RETIRED
    )
    reverted = ok(lead.post("/api/revert_reflection_action", json=undo))
    assert reverted["action"]["revert_note"] == "policy is back"
    assert str(reverted["action"]["reverted_by"]).startswith("key:")  # the reviewer's key, not "local"
    assert (
        core.storage.get_learnings("self-host-org", LearningFilter(ids=(playbook,)))[0].status
        is LearningStatus.CURRENT
    )
    again = lead.post("/api/revert_reflection_action", json={"action_id": action["action_id"]})
    assert again.status_code == 409

    # Restored, it is judged on what happens from now on: the three sessions before the
    # reviewer's decision do not count again (keys exist now: the
    # reviewer's key publishes), so one more bad session does not retire it...
    _harmful_session(lead, "r0", playbook, REPLIES[0])
    run_due_evaluations(core)
    assert len(ok(lead.post("/api/get_reflection_actions", json={}))["actions"]) == 1
    assert (
        core.storage.get_learnings("self-host-org", LearningFilter(ids=(playbook,)))[0].status
        is LearningStatus.CURRENT
    )
    # ...and three since the restoration do, as the first three did.
    for i, reply in enumerate(REPLIES[1:], start=1):
        _harmful_session(lead, f"r{i}", playbook, reply)
    run_due_evaluations(core)
    latest, _ = ok(lead.post("/api/get_reflection_actions", json={}))["actions"]
    assert (latest["action"], latest["evidence"]["hurt"]) == ("retire", 3)


def test_with_approval_required_a_hurting_learning_is_suspended_for_review(
    client: TestClient, core: Core
) -> None:
    ok(client.post("/api/update_config", json={"approval_required": True}))
    playbook = _seed(client, core)
    for i, reply in enumerate(REPLIES):
        _harmful_session(client, f"d{i}", playbook, reply)
    run_due_evaluations(core)
    (action,) = ok(client.post("/api/get_reflection_actions", json={}))["actions"]
    assert action["action"] == "suspend" and action["reason"].startswith("suspended for review")
    row = core.storage.get_learnings("self-host-org", LearningFilter(ids=(playbook,)))[0]
    assert row.status is LearningStatus.SUSPENDED
    approved = client.put(
        "/api/update_agent_playbook_status",
        json={"agent_playbook_id": playbook, "playbook_status": "approved"},
    )
    assert approved.status_code == 200, approved.text
    assert (
        core.storage.get_learnings("self-host-org", LearningFilter(ids=(playbook,)))[0].status
        is LearningStatus.CURRENT
    )


def test_a_reported_success_outranks_the_judge(client: TestClient, core: Core) -> None:
    body = publish_body("Refund my order", session_id="s1")
    body["interaction_data_list"] += [
        turn("Refunded.", role="Agent"),
        turn("Wrong order! Ask me first next time."),
    ]
    ok(client.post("/api/publish_interaction", json=body))
    run_due_evaluations(core)
    (judged,) = ok(client.post("/api/get_agent_success_evaluation_results", json={}))[
        "agent_success_evaluation_results"
    ]
    assert judged["is_success"] is False
    ok(client.post("/api/session_outcome", json=outcome("s1", "success")))
    run_due_evaluations(core)
    (verdict,) = ok(client.post("/api/get_agent_success_evaluation_results", json={}))[
        "agent_success_evaluation_results"
    ]
    assert verdict["is_success"] is True and verdict["evaluation_name"] == "outcome"


def _oven_session(client: TestClient, session: str, rule_id: int, *replies: str) -> None:
    interactions = [
        turn("What oven temperature for bread?"),
        turn(
            "Bake at 450 degrees Fahrenheit.",
            role="Agent",
            retrieved_learnings=[{"kind": "user_playbook", "learning_id": str(rule_id)}],
        ),
        *[turn(r) for r in replies],
    ]
    body = {
        "user_id": "k1",
        "session_id": session,
        "agent_version": "v1",
        "interaction_data_list": interactions,
    }
    ok(client.post("/api/publish_interaction", json=body))


def test_a_rule_the_user_contradicted_is_superseded_once_its_correction_is_learned(
    client: TestClient, core: Core
) -> None:
    rule = user_playbook(
        "Give oven temperatures in Fahrenheit.", user_id="k1", trigger="the user asks for an oven temperature"
    )
    ok(client.post("/api/add_user_playbook", json={"user_playbooks": [rule]}))
    (old,) = core.storage.list_learnings("self-host-org", LearningFilter(), limit=5)
    _oven_session(client, "k1-s1", old.id, "Not Fahrenheit, I use Celsius for oven temperatures.")
    run_due_evaluations(core)  # judged before extraction made a learning of the correction
    assert ok(client.post("/api/get_reflection_actions", json={}))["actions"] == []
    correction = next(
        t
        for t in core.storage.list_interactions("self-host-org", InteractionFilter())
        if "Not Fahr" in t.content
    )
    (new,) = core.storage.save_learnings(
        [
            Learning(
                org_id="self-host-org",
                kind=LearningKind.USER_PLAYBOOK,
                user_id="k1",
                agent_version="v1",
                content="Always give the user Celsius",
                trigger="When the user asks: what temperature for roasting a chicken",
                source_interaction_ids=[correction.id],
            )
        ],
        Audit(actor="extract"),
    )
    _oven_session(client, "k1-s2", old.id)
    run_due_evaluations(core)
    (action,) = ok(client.post("/api/get_reflection_actions", json={}))["actions"]
    assert (action["action"], action["related_learning_id"]) == ("supersede", str(new.id))
    (row,) = core.storage.get_learnings("self-host-org", LearningFilter(ids=(old.id,)))
    assert row.status is LearningStatus.SUPERSEDED and row.superseded_by == new.id


def test_with_a_model_a_retired_playbook_gets_a_revision_for_review(client: TestClient, core: Core) -> None:
    revised = "Apologise and share the tracking link; do not promise free upgrades."
    script = rules_script().on(
        "revise_learning",
        {"trigger": "a delivery is late", "content": revised, "rationale": "the offer ended"},
    )
    core.llm = script
    playbook = _seed(client, core)
    for i, reply in enumerate(REPLIES):
        _harmful_session(client, f"d{i}", playbook, reply)
    run_due_evaluations(core)
    assert len(core.storage.list_jobs("self-host-org", task=REVISE, statuses=[JobStatus.QUEUED])) == 1
    (claimed,) = core.storage.claim_jobs("test", limit=1, lease_seconds=60, tasks=[REVISE])
    handlers(core)[REVISE](JobContext(claimed, core.storage, "test", 60))
    (call,) = script.calls_to("revise_learning")
    assert len(call.inputs["failure_cases"]) == 3  # the model saw each session it hurt
    actions = ok(client.post("/api/get_reflection_actions", json={}))["actions"]
    proposal = next(a for a in actions if a["action"] == "propose_revision")
    (row,) = core.storage.get_learnings(
        "self-host-org", LearningFilter(ids=(int(proposal["related_learning_id"]),))
    )
    assert (row.content, row.status, row.approval) == (revised, LearningStatus.SUSPENDED, Approval.PENDING)
    decision = {"agent_playbook_id": row.id, "playbook_status": "approved"}
    ok(client.put("/api/update_agent_playbook_status", json=decision))
    rows = core.storage.get_learnings("self-host-org", LearningFilter(ids=(row.id, playbook)))
    fixed, original = (next(r for r in rows if r.id == wanted) for wanted in (row.id, playbook))
    assert (fixed.status, fixed.approval) == (LearningStatus.CURRENT, Approval.APPROVED)
    assert (original.status, original.superseded_by) == (LearningStatus.SUPERSEDED, row.id)
    suspended = ok(client.post("/api/get_agent_playbooks", json={"status_filter": ["suspended"]}))
    assert suspended["agent_playbooks"] == []  # the hurting version no longer waits beside its fix


def test_the_dashboard_shows_the_impact_the_api_computes(app: Any, client: TestClient, core: Core) -> None:
    playbook = _seed(client, core)
    for i, reply in enumerate(REPLIES[:2]):
        _harmful_session(client, f"d{i}", playbook, reply)
    run_due_evaluations(core)
    ref = ("agent_playbook", str(playbook))
    (listed,), judged = learning_impacts(core, "self-host-org")
    assert judged == 2 and listed == impacts(core.storage, "self-host-org", [ref])[ref]
    assert (listed.sessions_served, listed.hurt, listed.helped) == (2, 2, 0)
    later, _ = learning_impacts(core, "self-host-org", since=int(time.time()) + 60)
    assert later == []  # a window after the sessions counts none of them
    ui = make_client(with_dashboard(app, core))
    board = ui.get("/ui/evaluation")
    assert board.status_code == 200 and f"/ui/learnings/agent_playbook/{playbook}" in board.text
    page = ui.get(f"/ui/learnings/agent_playbook/{playbook}")
    assert page.status_code == 200 and "sessions it was served in, to 2 user(s)" in page.text
    helped_hurt_neutral = '<span class="ok-ink">0</span> / <span class="bad-ink">2</span> / 0'
    assert helped_hurt_neutral in page.text
