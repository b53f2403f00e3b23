"""Crediting and blaming injected learnings: offline from evidence, and with a scripted model."""

from __future__ import annotations

from typing import Any

import pytest

from reflexio.learn.attribution import (
    CHUNK_SIZE,
    MAX_CANDIDATES,
    Injection,
    TooManyLearnings,
    injections,
    judge_offline,
    judge_with_llm,
)
from reflexio.models.org_config import Config
from reflexio.records import InteractionRecord, Learning, LearningKind
from reflexio.testing import ScriptedLLM, rules_script
from tests.llm.support import turn

EXPRESS = Learning(
    org_id="o",
    kind=LearningKind.AGENT_PLAYBOOK,
    id=7,
    trigger="a customer's delivery is late",
    content="Apologise and offer a free express shipping upgrade on their next order.",
)
LINUX = Learning(
    org_id="o", kind=LearningKind.PROFILE, id=3, profile_id="p3", content="The user only uses Linux."
)


def given(*refs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"kind": kind, "learning_id": lid} for kind, lid in refs]


def session(reply: str, answer: str, refs: list[dict[str, Any]]) -> list[InteractionRecord]:
    return [
        turn(1, "User", "My parcel is three days late, where is it?"),
        turn(2, "Agent", answer, retrieved_learnings=refs),
        turn(3, "User", reply),
    ]


FOUND = {("agent_playbook", "7"): EXPRESS, ("profile", "p3"): LINUX}


def test_a_contradicted_rule_is_blamed_with_the_turn_that_contradicted_it() -> None:
    turns = session(
        "That express upgrade doesn't exist. Please stop offering it.",
        "Sorry! I've added a free express shipping upgrade to your next order.",
        given(("agent_playbook", "7")),
    )
    (verdict,) = judge_offline(turns, FOUND, success=False)
    assert verdict.is_relevant is True
    assert verdict.impact == "negative" and verdict.contradicted_by == 3
    assert verdict.diagnosis is not None and verdict.diagnosis["category"] == "content_defect"
    assert verdict.diagnosis["evidence_interaction_ids"] == [3]


def test_a_complaint_about_its_topic_in_a_failed_session_blames_it() -> None:
    turns = session(
        "Another fake promise of free express shipping. I want to speak to a person.",
        "Sorry! I've added a free express shipping upgrade to your next order.",
        given(("agent_playbook", "7")),
    )
    (verdict,) = judge_offline(turns, FOUND, success=False)
    assert verdict.impact == "negative"


def test_a_restated_learning_in_a_failed_session_is_an_application_failure_not_a_defect() -> None:
    turns = [
        turn(1, "User", "Recommend a laptop for me."),
        turn(2, "Agent", "The MacBook Air is a great choice.", retrieved_learnings=given(("profile", "p3"))),
        turn(3, "User", "Again, Linux only please."),
    ]
    (verdict,) = judge_offline(turns, FOUND, success=False)
    assert verdict.impact == "neutral" and "restated" in verdict.impact_reason
    assert verdict.diagnosis is None  # profiles carry no diagnosis


def test_a_relevant_learning_in_a_successful_session_is_credited() -> None:
    turns = [
        turn(1, "User", "Recommend a laptop for me, something that runs Linux well."),
        turn(2, "Agent", "A ThinkPad X1 with Fedora.", retrieved_learnings=given(("profile", "p3"))),
        turn(3, "User", "Thanks, perfect."),
    ]
    (verdict,) = judge_offline(turns, FOUND, success=True)
    assert (verdict.is_relevant, verdict.impact) == (True, "positive")


def test_an_unrelated_learning_is_neutral_whatever_the_outcome() -> None:
    turns = [
        turn(1, "User", "What is the capital of Peru?"),
        turn(2, "Agent", "Lima.", retrieved_learnings=given(("agent_playbook", "7"))),
        turn(3, "User", "Wrong, it's not Lima?"),
    ]
    for success in (True, False):
        (verdict,) = judge_offline(turns, FOUND, success=success)
        assert (verdict.is_relevant, verdict.impact) == (False, "neutral")


def test_a_reaction_before_the_injection_is_not_held_against_it() -> None:
    turns = [
        turn(1, "User", "My parcel is late. Don't offer me a free express upgrade, I never want one."),
        turn(
            2, "Agent", "Understood, it is due Thursday.", retrieved_learnings=given(("agent_playbook", "7"))
        ),
    ]
    (verdict,) = judge_offline(turns, FOUND, success=True)
    assert verdict.impact == "positive"


def test_refs_are_deduplicated_and_deleted_learnings_skipped() -> None:
    refs = given(("agent_playbook", "7"), ("agent_playbook", "7"), ("user_playbook", "99"))
    turns = session("ok", "Due Thursday.", refs)
    assert injections(turns) == [Injection(2, "agent_playbook", "7"), Injection(2, "user_playbook", "99")]
    assert [v.injection.learning_id for v in judge_offline(turns, FOUND, success=True)] == ["7"]


def test_more_than_the_limit_is_refused_before_any_call() -> None:
    refs = [{"kind": "user_playbook", "learning_id": str(i)} for i in range(MAX_CANDIDATES + 1)]
    llm = ScriptedLLM()
    with pytest.raises(TooManyLearnings):
        judge_with_llm(llm, Config(), session("ok", "fine", refs), {}, {"is_success": True})
    assert llm.calls == []


def _many(n: int) -> tuple[list[InteractionRecord], dict[tuple[str, str], Learning]]:
    found = {
        ("user_playbook", str(i)): Learning(
            org_id="o", kind=LearningKind.USER_PLAYBOOK, id=i, content=f"rule {i}"
        )
        for i in range(1, n + 1)
    }
    refs = [{"kind": k, "learning_id": lid} for k, lid in found]
    return session("thanks", "done", refs), found


def test_the_model_judges_learnings_in_chunks_of_twenty_five() -> None:
    turns, found = _many(60)
    llm = rules_script()
    verdicts = judge_with_llm(llm, Config(), turns, found, {"is_success": True})
    calls = llm.calls_to("judge_learnings")
    assert len(calls) == 3 and [len(c.inputs["injections"]) for c in calls] == [CHUNK_SIZE, CHUNK_SIZE, 10]
    assert len(verdicts) == 60 and all(v.judge == "llm" and v.impact is not None for v in verdicts)
    assert "[2:user_playbook:1] (user_playbook)" in calls[0].inputs["learnings"]


def test_a_learning_the_model_leaves_out_is_asked_once_more_then_left_unjudged() -> None:
    turns, found = _many(3)

    def answer(inputs: dict[str, Any]) -> dict[str, Any]:
        refs = [i.ref for i in inputs["injections"] if i.learning_id != "2"]
        return {"verdicts": [{"learning_ref": r, "is_relevant": True, "impact": "positive"} for r in refs]}

    llm = ScriptedLLM().on("judge_learnings", answer)
    verdicts = judge_with_llm(llm, Config(), turns, found, {"is_success": True})
    assert len(llm.calls) == 2 and [i.learning_id for i in llm.calls[1].inputs["injections"]] == ["2"]
    missing = next(v for v in verdicts if v.injection.learning_id == "2")
    assert missing.impact is None and missing.is_relevant is None


def test_the_model_sees_the_success_definition_and_the_session_verdict() -> None:
    turns = session("stop offering it", "free express upgrade added", given(("agent_playbook", "7")))
    llm = rules_script()
    config = Config.model_validate({"agent_success_config": {"success_definition_prompt": "Ticket closed."}})
    judge_with_llm(llm, config, turns, FOUND, {"is_success": False, "failure_type": "wrong_answer"})
    (call,) = llm.calls
    assert call.inputs["success_definition"] == "Ticket closed."
    assert call.inputs["session_verdict"].startswith("the session failed (wrong_answer)")


def test_a_flat_denial_in_a_failed_session_blames_the_rule_behind_the_answer() -> None:
    waiver = Learning(
        org_id="o",
        kind=LearningKind.AGENT_PLAYBOOK,
        id=8,
        trigger="a customer is charged an overdraft fee",
        content="Offer to waive the overdraft fee as a one-time courtesy.",
    )
    turns = [
        turn(1, "User", "I got hit with an overdraft fee again."),
        turn(
            2,
            "Agent",
            "I've waived the overdraft fee as a one-time courtesy!",
            retrieved_learnings=given(("agent_playbook", "8")),
        ),
        turn(3, "User", "The waiver you promised never happened. There is no courtesy waiver."),
    ]
    (verdict,) = judge_offline(turns, {("agent_playbook", "8"): waiver}, success=False)
    assert verdict.impact == "negative"
    assert verdict.diagnosis is not None and verdict.diagnosis["evidence_interaction_ids"] == [3]


def test_no_thanks_to_the_agents_question_is_not_held_against_the_rule() -> None:
    turns = session(
        "No, thanks. The express upgrade is not needed.",
        "Sorry! Shall I add a free express shipping upgrade to your next order?",
        given(("agent_playbook", "7")),
    )
    (verdict,) = judge_offline(turns, FOUND, success=False)
    assert verdict.impact == "neutral"
