"""LLMProposer and LLMJudge over a ScriptedLLM: what they ask, how often, and what they decide."""

from __future__ import annotations

from typing import Any

from reflexio.learn.llm_extract import (
    LLMJudge,
    LLMProposer,
    Signal,
    llm_learner,
    render_conversation,
    signal_of,
)
from reflexio.learn.pipeline import LearnContext, Proposal, Verdict
from reflexio.llm import LLMOutputError
from reflexio.models.org_config import Config
from reflexio.records import Learning, LearningKind
from reflexio.testing import ScriptedLLM
from tests.llm.support import turn, window

PROFILE, PLAYBOOK = LearningKind.PROFILE, LearningKind.USER_PLAYBOOK
BOTH = (PROFILE, PLAYBOOK)


def ctx(*existing: Learning, **config: Any) -> LearnContext:
    known: dict[LearningKind, list[Learning]] = {PROFILE: [], PLAYBOOK: []}
    for row in existing:
        known[row.kind].append(row)
    return LearnContext(config=Config.model_validate(config), existing=known, requests={})


def learning(id_: int, kind: LearningKind, content: str, trigger: str | None = None) -> Learning:
    return Learning(org_id="o", kind=kind, content=content, id=id_, user_id="u1", trigger=trigger)


CORRECTED = window(
    turn(1, "User", "Recommend a laptop for me."),
    turn(2, "Assistant", "The MacBook Air is a great choice."),
    turn(3, "User", "I only ever use Linux. Please don't suggest Macs."),
)

LINUX = {
    "content": "The user only uses Linux.",
    "type": "preference",
    "ttl": "one_year",
    "evidence": [3],
}
NO_MACS = {
    "track": "correction",
    "rationale": "The user had to correct a Mac suggestion.",
    "trigger": "Recommending laptops or computers to this user",
    "content": "Suggest only machines that run Linux well; never suggest Macs.",
    "evidence": [3],
}


# -- the pre-gate ---------------------------------------------------------------------------------


def test_pre_gate_signals() -> None:
    assert (
        signal_of(window(turn(1, "User", "hi"), turn(2, "Assistant", "Hello! How can I help?")))
        is Signal.NONE
    )
    assert signal_of(
        window(turn(1, "User", "What is your return policy?"), turn(2, "Agent", "30 days."))
    ) is (Signal.NONE)
    assert signal_of(CORRECTED) is Signal.STRONG
    assert signal_of(window(turn(1, "Assistant", "Done."), turn(2, "User", "thanks, great!"))) is Signal.NONE
    assert signal_of(window(turn(1, "User", "I'm a vegetarian, suggest a dinner."))) is Signal.WEAK
    failed = turn(1, "Assistant", "Let me look.", tools_used=[{"tool_name": "db.query", "status": "error"}])
    assert signal_of(window(failed)) is Signal.STRONG
    assert (
        signal_of(window(turn(1, "Assistant", "Fixed.", expert_content="Also run the tests.")))
        is Signal.STRONG
    )


def test_pre_gate_reads_only_new_turns() -> None:
    learned = window(*CORRECTED.turns, turn(4, "User", "What time is it?"), new_from=3)
    assert signal_of(learned) is Signal.NONE


def test_conversation_rendering_marks_context_and_shows_tools_and_expert() -> None:
    tool = {"tool_name": "tests.run", "tool_data": {"path": "tests/"}, "status": "failed"}
    text = render_conversation(
        [
            turn(1, "User", "fix it"),
            turn(2, "Assistant", "done", tools_used=[tool], expert_content="ran tests"),
        ],
        new_from=1,
    )
    assert text.index("context only") < text.index("[#1] User: fix it") < text.index("new turns")
    assert (
        'tool: tests.run({"path": "tests/"}) -> failed' in text and "expert's ideal answer: ran tests" in text
    )


# -- the proposer -----------------------------------------------------------------------------------


def test_no_signal_no_call() -> None:
    llm = ScriptedLLM()
    quiet = window(turn(1, "User", "What is your return policy?"), turn(2, "Assistant", "30 days."))
    assert LLMProposer(llm).propose(quiet, BOTH, ctx()) == []
    assert llm.calls == []


def test_a_correction_goes_straight_to_one_call_for_both_kinds() -> None:
    llm = ScriptedLLM().on("extract", {"profiles": [LINUX], "playbooks": [NO_MACS]})
    proposals = LLMProposer(llm).propose(CORRECTED, BOTH, ctx())
    assert [c.prompt for c in llm.calls] == ["extract"]
    assert "profiles and playbooks" in llm.calls[0].inputs["kinds"]
    profile, playbook = proposals
    assert (profile.kind, profile.content, profile.ttl, profile.track) == (
        PROFILE,
        "The user only uses Linux.",
        "one_year",
        "preference",
    )
    assert profile.source_interaction_ids == [3]
    assert (
        playbook.kind is PLAYBOOK
        and playbook.trigger == NO_MACS["trigger"]
        and playbook.track == "correction"
    )
    assert playbook.rationale == NO_MACS["rationale"]


def test_only_the_window_kinds_are_kept() -> None:
    llm = ScriptedLLM().on("extract", {"profiles": [LINUX], "playbooks": [NO_MACS]})
    proposals = LLMProposer(llm).propose(CORRECTED, (PROFILE,), ctx())
    assert [p.kind for p in proposals] == [PROFILE]
    assert llm.calls[0].inputs["kinds"] == "profiles"


def test_a_weak_signal_asks_the_gate_first() -> None:
    weak = window(turn(1, "User", "I'm a vegetarian, suggest a dinner."), turn(2, "Assistant", "Try a dal."))
    llm = ScriptedLLM().on("gate", {"learnable": False, "reason": "nothing lasting"})
    assert LLMProposer(llm).propose(weak, BOTH, ctx()) == []
    assert [c.prompt for c in llm.calls] == ["gate"]  # gate false: no extraction call
    vegetarian = {"content": "The user is vegetarian.", "type": "fact", "evidence": [1]}
    llm.on("gate", {"learnable": True}).on("extract", {"profiles": [vegetarian]})
    assert [p.content for p in LLMProposer(llm).propose(weak, BOTH, ctx())] == ["The user is vegetarian."]
    assert [c.prompt for c in llm.calls] == ["gate", "gate", "extract"]


def test_skip_should_run_check_skips_the_gate() -> None:
    weak = window(turn(1, "User", "I'm a vegetarian."))
    llm = ScriptedLLM().on("extract", {})
    LLMProposer(llm).propose(weak, BOTH, ctx(skip_should_run_check=True))
    assert [c.prompt for c in llm.calls] == ["extract"]


def test_an_unusable_gate_answer_fails_open() -> None:
    weak = window(turn(1, "User", "I'm a vegetarian."))
    llm = ScriptedLLM().on("gate", LLMOutputError("garbage")).on("extract", {})
    LLMProposer(llm).propose(weak, BOTH, ctx())
    assert [c.prompt for c in llm.calls] == ["gate", "extract"]


def test_an_unusable_extraction_skips_the_window() -> None:
    llm = ScriptedLLM().on("extract", LLMOutputError("garbage twice"))
    assert LLMProposer(llm).propose(CORRECTED, BOTH, ctx()) == []


def test_tautologies_and_context_only_items_are_dropped() -> None:
    tautology = {**NO_MACS, "trigger": "When the user asks for a refund", "content": "Process the refund."}
    old = {**LINUX, "evidence": [1]}
    later = window(
        *CORRECTED.turns, turn(4, "Assistant", "Sorry!"), turn(5, "User", "Also, no Windows."), new_from=3
    )
    llm = ScriptedLLM().on("extract", {"profiles": [old], "playbooks": [tautology]})
    assert LLMProposer(llm).propose(later, BOTH, ctx()) == []


def test_known_learnings_are_shown_to_the_extraction() -> None:
    known = learning(7, PROFILE, "The user runs Fedora.")
    llm = ScriptedLLM().on("extract", {})
    LLMProposer(llm).propose(CORRECTED, BOTH, ctx(known))
    assert "[7] The user runs Fedora." in llm.calls[0].inputs["existing"]


# -- the judge ----------------------------------------------------------------------------------------


def proposal(content: str, kind: LearningKind = PROFILE) -> Proposal:
    return Proposal(kind=kind, content=content, source_interaction_ids=[3])


def test_nothing_similar_is_added_without_a_call() -> None:
    llm = ScriptedLLM()
    decisions = LLMJudge(llm).decide([proposal("a"), proposal("b")], [[], []])
    assert [d.verdict for d in decisions] == [Verdict.ADD, Verdict.ADD] and llm.calls == []


def test_merge_decisions_are_mapped_in_one_call() -> None:
    fedora = learning(7, PROFILE, "The user runs Fedora.")
    sf = learning(8, PROFILE, "The user lives in San Francisco.")
    llm = ScriptedLLM().on(
        "merge",
        {
            "decisions": [
                {"item": 1, "verdict": "update", "existing_id": 7, "content": "The user runs Fedora 40."},
                {"item": 2, "verdict": "supersede", "existing_id": 8, "reason": "moved to Austin"},
                {"item": 3, "verdict": "keep", "existing_id": 7},
                {"item": 4, "verdict": "supersede", "existing_id": 99},
            ]
        },
    )
    items = [
        proposal("Fedora 40"),
        proposal("Lives in Austin"),
        proposal("Uses Fedora"),
        proposal("x"),
        proposal("y"),
    ]
    decisions = LLMJudge(llm).decide(items, [[fedora], [sf], [fedora], [sf], [sf]])
    assert len(llm.calls_to("merge")) == 1
    assert (decisions[0].verdict, decisions[0].target, decisions[0].content) == (
        Verdict.UPDATE,
        7,
        "The user runs Fedora 40.",
    )
    assert (decisions[1].verdict, decisions[1].target, decisions[1].reason) == (
        Verdict.SUPERSEDE,
        8,
        "moved to Austin",
    )
    assert (decisions[2].verdict, decisions[2].target) == (Verdict.KEEP, 7)
    assert decisions[3].verdict is Verdict.ADD  # a target that was not offered is never used
    assert decisions[4].verdict is Verdict.ADD  # no decision: nothing is lost
    assert "EXISTING [8]" in llm.calls[0].inputs["items"]


def test_an_unusable_merge_answer_adds() -> None:
    llm = ScriptedLLM().on("merge", LLMOutputError("garbage"))
    decisions = LLMJudge(llm).decide([proposal("a")], [[learning(1, PROFILE, "b")]])
    assert decisions[0].verdict is Verdict.ADD


def test_the_extraction_relation_saves_the_merge_call() -> None:
    sf = learning(8, PROFILE, "The user lives in San Francisco.")
    austin = {
        "content": "The user lives in Austin.",
        "evidence": [3],
        "relation": "contradicts",
        "existing_id": 8,
    }
    llm = ScriptedLLM().on("extract", {"profiles": [austin]})
    proposer, judge = llm_learner(llm)
    proposals = proposer.propose(CORRECTED, BOTH, ctx(sf))
    decisions = judge.decide(proposals, [[sf]])
    assert (decisions[0].verdict, decisions[0].target) == (Verdict.SUPERSEDE, 8)
    assert [c.prompt for c in llm.calls] == ["extract"]


def test_similar_learnings_the_extraction_did_not_see_need_a_merge_call() -> None:
    unseen = learning(50, PROFILE, "The user lives in SF.")
    llm = ScriptedLLM().on("extract", {"profiles": [{**LINUX, "relation": "new"}]})
    llm.on("merge", {"decisions": [{"item": 1, "verdict": "keep", "existing_id": 50}]})
    proposer, judge = llm_learner(llm)
    proposals = proposer.propose(CORRECTED, BOTH, ctx())
    assert judge.decide(proposals, [[unseen]])[0].verdict is Verdict.KEEP
    assert [c.prompt for c in llm.calls] == ["extract", "merge"]


def test_extractor_context_prompts_reach_the_extraction_call() -> None:
    llm = ScriptedLLM().on("extract", {})
    config = {
        "agent_context_prompt": "A travel booking agent.",
        "profile_extractor_config": {
            "extraction_definition_prompt": "Facts about travellers.",
            "context_prompt": "Travellers book for families.",
        },
        "user_playbook_extractor_config": {
            "extraction_definition_prompt": "Rules for booking.",
            "context_prompt": "Agents may hold seats for 24 hours.",
        },
    }
    LLMProposer(llm).propose(CORRECTED, BOTH, ctx(**config))
    context = llm.calls[0].inputs["agent_context"]
    assert context.splitlines() == [
        "A travel booking agent.",
        "Travellers book for families.",
        "Agents may hold seats for 24 hours.",
    ]
    assert "Agents may hold seats for 24 hours." in str(llm.calls[0].call.messages)


def test_the_profile_gate_override_is_what_the_gate_is_told() -> None:
    weak = window(turn(1, "User", "I'm a vegetarian, suggest a dinner."), turn(2, "Assistant", "Try a dal."))
    llm = ScriptedLLM().on("gate", {"learnable": False})
    profile = {
        "extraction_definition_prompt": "Facts about diners.",
        "should_extract_profile_prompt_override": "Only dietary restrictions are worth remembering.",
    }
    LLMProposer(llm).propose(weak, BOTH, ctx(profile_extractor_config=profile))
    assert llm.calls[0].inputs["profile_definition"] == "Only dietary restrictions are worth remembering."
