"""Judging sessions from evidence in the log (no LLM)."""

from __future__ import annotations

from typing import Any

from reflexio.learn.evaluate import judge_turns, sampled
from reflexio.records import InteractionRecord


def turn(role: str, content: str, tools: list[dict[str, Any]] | None = None) -> InteractionRecord:
    return InteractionRecord(
        org_id="o",
        request_id="r",
        user_id="u",
        session_id="s",
        role=role,
        content=content,
        tools_used=tools or [],
    )


def test_a_clean_session_succeeds() -> None:
    verdict = judge_turns([turn("User", "What is your return policy?"), turn("Agent", "30 days.")])
    assert verdict == {
        "is_success": True,
        "failure_type": None,
        "failure_reason": None,
        "is_escalated": False,
        "number_of_correction_per_session": 0,
        "evaluation_name": "rules",
    }


def test_a_session_that_ends_on_a_correction_fails() -> None:
    verdict = judge_turns(
        [
            turn("User", "Restart the staging web server."),
            turn("Assistant", "Restarted staging-web-1."),
            turn("User", "Please ask me before you take any action on servers."),
        ]
    )
    assert verdict["is_success"] is False and verdict["failure_type"] == "wrong_answer"
    assert verdict["number_of_correction_per_session"] == 1


def test_an_unrecovered_tool_failure_fails_and_a_recovered_one_does_not() -> None:
    broken = [{"tool_name": "catalog.search", "tool_data": {}, "status": "error"}]
    fixed = [*broken, {"tool_name": "catalog.search", "tool_data": {}, "status": "success"}]
    assert (
        judge_turns([turn("User", "Find a lamp"), turn("Agent", "Sorry", broken)])["failure_type"]
        == "wrong_tool"
    )
    assert judge_turns([turn("User", "Find a lamp"), turn("Agent", "Here", fixed)])["is_success"] is True


def test_asking_for_a_human_is_an_escalation() -> None:
    verdict = judge_turns(
        [turn("User", "Refund me"), turn("Agent", "No."), turn("User", "Let me speak to a manager now")]
    )
    assert verdict["is_escalated"] is True and verdict["is_success"] is False


def test_sampling_is_deterministic_and_follows_the_rate() -> None:
    picks = [sampled("o", "u", f"s{i}", 0.2) for i in range(2000)]
    assert picks == [sampled("o", "u", f"s{i}", 0.2) for i in range(2000)]
    assert 0.15 < sum(picks) / len(picks) < 0.25
    assert not any(sampled("o", "u", f"s{i}", 0.0) for i in range(100))


def test_asking_the_same_thing_again_counts_as_a_correction() -> None:
    verdict = judge_turns(
        [
            turn("User", "Book me a table for two at eight tonight"),
            turn("Agent", "Here are some restaurants."),
            turn("User", "Book me a table for two at eight tonight please"),
        ]
    )
    assert verdict["number_of_correction_per_session"] == 1 and verdict["is_success"] is False


def test_a_tool_that_broke_on_the_system_side_is_a_system_error() -> None:
    broken = [{"tool_name": "orders.lookup", "tool_data": {}, "status": "error: 503 service unavailable"}]
    verdict = judge_turns([turn("User", "Where is order 12?"), turn("Agent", "Sorry", broken)])
    assert verdict["failure_type"] == "system_error" and verdict["is_success"] is False


def test_a_flat_contradiction_of_the_agent_is_a_correction() -> None:
    verdict = judge_turns(
        [
            turn("User", "Why was I charged an overdraft fee?"),
            turn("Agent", "I've waived the overdraft fee as a one-time courtesy!"),
            turn("User", "The waiver you promised never happened. There is no courtesy waiver."),
        ]
    )
    assert verdict["is_success"] is False and verdict["number_of_correction_per_session"] == 1


def test_a_no_that_answers_the_agents_question_is_not_a_correction() -> None:
    verdict = judge_turns(
        [
            turn("User", "Where is my parcel?"),
            turn("Agent", "It arrives on Thursday. Is there anything else I can help with?"),
            turn("User", "No, thanks."),
        ]
    )
    assert verdict["is_success"] is True and verdict["number_of_correction_per_session"] == 0


def test_a_no_to_a_question_that_goes_on_to_correct_still_counts() -> None:
    verdict = judge_turns(
        [
            turn("User", "Send it to my address."),
            turn("Agent", "Shipping to 12 Oak Street. Shall I confirm?"),
            turn("User", "No, that's the wrong address, I moved to 4 Elm Road."),
        ]
    )
    assert verdict["number_of_correction_per_session"] == 1


def test_a_no_to_a_statement_is_still_a_correction() -> None:
    verdict = judge_turns(
        [
            turn("User", "When does my flight leave?"),
            turn("Agent", "Your flight leaves at 9."),
            turn("User", "No, it leaves at 10."),
        ]
    )
    assert verdict["number_of_correction_per_session"] == 1
