"""What the LLM judge costs per session: one call judges a session and its first 25 learnings.

The goal (issue 13) is at most 2 judge calls per judged session plus 1 per 25 injected
learnings. These tests count the scripted model's calls through the session-idle job's real
handler, with the model picked for every session (``sampling_rate`` 1.0).
"""

from __future__ import annotations

from typing import Any

from starlette.testclient import TestClient

from reflexio.learn.attribution import CHUNK_SIZE
from reflexio.llm import LLMError
from reflexio.records import Audit, Learning, LearningKind
from reflexio.service.core import Core
from reflexio.testing import ScriptedLLM, rules_script
from tests.api.support import ok, turn
from tests.api.test_evaluation import outcome, run_due_evaluations

ORG = "self-host-org"


def _judge_everything(core: Core) -> ScriptedLLM:
    config = core.org_config(ORG).model_dump(mode="json")
    config["agent_success_config"]["sampling_rate"] = 1.0
    core.storage.put_org_config(ORG, config)
    script = rules_script()
    core.llm = script
    return script


def _rules(core: Core, n: int) -> list[str]:
    rows = core.storage.save_learnings(
        [
            Learning(org_id=ORG, kind=LearningKind.AGENT_PLAYBOOK, content=f"Mention the parcel rule {i}.")
            for i in range(n)
        ],
        Audit(),
    )
    return [str(row.id) for row in rows]


def _session(client: TestClient, session: str, ids: list[str]) -> None:
    refs = [{"kind": "agent_playbook", "learning_id": i} for i in ids]
    interactions = [
        turn("My parcel is late, where is it?"),
        turn("It arrives on Thursday, per the parcel rules.", role="Agent", retrieved_learnings=refs),
    ]
    body = {"user_id": "u1", "session_id": session, "interaction_data_list": interactions}
    ok(client.post("/api/publish_interaction", json=body))


def _verdicts(client: TestClient) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = ok(
        client.post("/api/get_retrieved_learning_evaluation_results", json={"limit": 100})
    )["results"]
    return found


def test_one_call_judges_a_session_and_its_learnings(client: TestClient, core: Core) -> None:
    script = _judge_everything(core)
    _session(client, "s1", _rules(core, 3))
    run_due_evaluations(core)
    (call,) = script.calls
    assert call.prompt == "evaluate_session" and len(call.inputs["injections"]) == 3
    verdicts = _verdicts(client)
    assert len(verdicts) == 3 and {v["impact"] for v in verdicts} == {"positive"}
    (judged,) = ok(client.post("/api/get_agent_success_evaluation_results", json={}))[
        "agent_success_evaluation_results"
    ]
    assert judged["evaluation_name"] == "llm" and "verdicts" not in judged


def test_learnings_beyond_the_first_chunk_cost_one_call_per_chunk(client: TestClient, core: Core) -> None:
    script = _judge_everything(core)
    _session(client, "s1", _rules(core, CHUNK_SIZE + 30))
    run_due_evaluations(core)
    assert [c.prompt for c in script.calls] == ["evaluate_session", "judge_learnings", "judge_learnings"]
    assert [len(c.inputs["injections"]) for c in script.calls] == [CHUNK_SIZE, CHUNK_SIZE, 5]
    verdicts = _verdicts(client)
    assert len(verdicts) == CHUNK_SIZE + 30 and None not in {v["impact"] for v in verdicts}


def test_a_reported_outcome_leaves_only_the_learning_judge(client: TestClient, core: Core) -> None:
    script = _judge_everything(core)
    _session(client, "s1", _rules(core, 2))
    ok(client.post("/api/session_outcome", json=outcome("s1", "success")))
    run_due_evaluations(core)
    (call,) = script.calls
    assert call.prompt == "judge_learnings" and call.inputs["success"] is True


def test_a_failed_session_call_leaves_session_and_learnings_to_the_offline_judge(
    client: TestClient, core: Core
) -> None:
    script = _judge_everything(core)
    script.on("evaluate_session", LLMError("provider down"))
    _session(client, "s1", _rules(core, 2))
    run_due_evaluations(core)
    assert [c.prompt for c in script.calls] == ["evaluate_session"]  # not asked again
    rows = core.storage.list_evaluations(ORG, kind="learning", limit=10)
    assert len(rows) == 2 and {row.result["judge"] for row in rows} == {"rules"}


def test_a_learning_the_session_call_leaves_out_is_asked_once_more(client: TestClient, core: Core) -> None:
    script = _judge_everything(core)
    ids = _rules(core, 2)
    partial = {
        "is_success": True,
        "verdicts": [
            {"learning_ref": f"2:agent_playbook:{ids[0]}", "is_relevant": True, "impact": "positive"},
            {"learning_ref": "2:agent_playbook:999", "is_relevant": True, "impact": "negative"},
        ],
    }
    script.on("evaluate_session", lambda inputs: _with_ids(partial, inputs))
    _session(client, "s1", ids)
    run_due_evaluations(core)
    assert [c.prompt for c in script.calls] == ["evaluate_session", "judge_learnings"]
    (retry,) = script.calls_to("judge_learnings")
    assert [i.learning_id for i in retry.inputs["injections"]] == [ids[1]]
    verdicts = _verdicts(client)
    assert sorted(v["learning_id"] for v in verdicts) == sorted(ids)  # the invented ref is dropped


def _with_ids(answer: dict[str, Any], inputs: Any) -> dict[str, Any]:
    """The answer with its refs on the agent turn's real interaction id."""
    turn_id = inputs["injections"][0].interaction_id
    verdicts = [
        {**v, "learning_ref": f"{turn_id}:{v['learning_ref'].split(':', 1)[1]}"} for v in answer["verdicts"]
    ]
    return {**answer, "verdicts": verdicts}
