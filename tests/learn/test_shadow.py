"""Shadow comparison per turn: blind to position, offline from explicit evidence only."""

from __future__ import annotations

from reflexio.learn.shadow import compare_offline, compare_with_llm, shadow_turns
from reflexio.models.org_config import Config
from reflexio.testing import ScriptedLLM, rules_script
from tests.llm.support import turn


def test_only_agent_turns_with_both_answers_are_compared() -> None:
    turns = [
        turn(1, "User", "hi", shadow_content="ignored"),
        turn(2, "Agent", "Hello!", shadow_content="Hey."),
        turn(3, "Agent", "No shadow here."),
    ]
    assert shadow_turns(turns) == [1]


def test_the_answer_closer_to_the_expert_wins() -> None:
    turns = [
        turn(1, "User", "How do I reset my password?"),
        turn(
            2,
            "Agent",
            "Use the reset link on the sign-in page; it expires in one hour.",
            shadow_content="Tell me your current password and I will change it.",
            expert_content="Send the user the password reset link from the sign-in page.",
        ),
    ]
    (verdict,) = compare_offline(turns)
    assert verdict.winner == "regular" and verdict.is_significantly_better


def test_the_answer_the_user_contradicts_loses() -> None:
    turns = [
        turn(1, "User", "Recommend a laptop."),
        turn(2, "Agent", "Get a MacBook Air.", shadow_content="Get a ThinkPad running Fedora Linux."),
        turn(3, "User", "Don't suggest a MacBook, I hate Macs."),
    ]
    (verdict,) = compare_offline(turns)
    assert verdict.winner == "shadow"
    assert verdict.better_request == ("2" if verdict.reflexio_is_request_1 else "1")


def test_no_evidence_is_a_tie() -> None:
    turns = [turn(1, "User", "Hi"), turn(2, "Agent", "Hello!", shadow_content="Hi there.")]
    (verdict,) = compare_offline(turns)
    assert (verdict.winner, verdict.better_request, verdict.is_significantly_better) == ("tie", "tie", False)


def test_positions_are_randomised_and_recorded() -> None:
    turns = [turn(i, "Agent", f"a{i}", shadow_content=f"b{i}") for i in range(1, 41)]
    firsts = {v.reflexio_is_request_1 for v in compare_offline(turns)}
    assert firsts == {True, False}


def test_the_model_compares_a_session_in_one_call_and_sides_are_unscrambled() -> None:
    turns = [
        turn(1, "User", "Recommend a laptop."),
        turn(2, "Agent", "Get a MacBook Air.", shadow_content="Get a ThinkPad running Fedora Linux."),
        turn(3, "User", "Thanks"),
        turn(4, "Agent", "Anything else?", shadow_content="Bye."),
    ]

    def answer(inputs: dict[str, object]) -> dict[str, object]:
        # The judge prefers whichever request holds the ThinkPad answer.
        comparisons = []
        for at in inputs["indexes"]:  # type: ignore[attr-defined]
            t = inputs["all_turns"][at]  # type: ignore[index]
            first_is_regular = "Request 1: " + t.content in inputs["turns"]  # type: ignore[operator]
            better = "2" if first_is_regular else "1"
            comparisons.append(
                {"interaction_id": t.id, "better_request": better, "is_significantly_better": True}
            )
        return {"comparisons": comparisons}

    llm = ScriptedLLM().on("compare_shadow", answer)
    verdicts = compare_with_llm(llm, Config(), turns)
    assert len(llm.calls) == 1
    assert [v.winner for v in verdicts] == ["shadow", "shadow"]
    assert all(v.judge == "llm" for v in verdicts)


def test_the_rules_script_answers_like_the_offline_judge() -> None:
    turns = [
        turn(1, "User", "Recommend a laptop."),
        turn(2, "Agent", "Get a MacBook Air.", shadow_content="Get a ThinkPad running Fedora Linux."),
        turn(3, "User", "Don't suggest a MacBook, I hate Macs."),
    ]
    assert [v.winner for v in compare_with_llm(rules_script(), Config(), turns)] == ["shadow"]
