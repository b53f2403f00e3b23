"""The publish-time triage: which publishes carry a lesson worth learning at once."""

from __future__ import annotations

from typing import Any

import pytest

from reflexio.learn.rules.triage import teaches_now
from reflexio.records import InteractionRecord


def turn(role: str, content: str = "", **extra: Any) -> InteractionRecord:
    return InteractionRecord(
        org_id="o", request_id="r", user_id="u", session_id="s", role=role, content=content, **extra
    )


ANSWER = turn("Assistant", "The MacBook Air is a great all-round choice.")


def never() -> list[InteractionRecord]:
    raise AssertionError("the session's last turns were not needed")


@pytest.mark.parametrize(
    "text",
    [
        "I only ever use Linux. Please don't suggest Macs.",
        "From now on, always answer in Spanish.",
        "I'm vegetarian.",
        "You should have asked me for the order number before refunding.",
    ],
)
def test_a_reaction_that_teaches_is_learned_now(text: str) -> None:
    assert teaches_now([turn("User", "Recommend a laptop."), ANSWER, turn("User", text)], never)


@pytest.mark.parametrize(
    "text", ["Thanks!", "Sounds good, I'll look into it.", "What about the return policy?", "Ok."]
)
def test_ordinary_turns_wait_for_the_stride(text: str) -> None:
    assert not teaches_now([turn("User", "Recommend a laptop."), ANSWER, turn("User", text)], never)


def test_a_failed_tool_call_or_an_expert_answer_is_learned_now() -> None:
    failed = turn("Assistant", "Done.", tools_used=[{"tool_name": "crm.find", "status": "timeout"}])
    assert teaches_now([turn("User", "Find customer 9."), failed], never)
    expert = turn("Assistant", "Restart the servers.", expert_content="Check the dashboards first.")
    assert teaches_now([turn("User", "The site is down."), expert], never)
    same = turn("Assistant", "Restart it.", expert_content="Restart it.")
    assert not teaches_now([turn("User", "The site is down."), same], never)


def test_a_publish_that_opens_with_a_reaction_reads_the_sessions_last_turn_once() -> None:
    asked: list[int] = []

    def last_answer() -> list[InteractionRecord]:
        asked.append(1)
        return [turn("User", "Recommend a laptop."), ANSWER]

    assert teaches_now([turn("User", "Wrong again, Linux only.")], last_answer)
    assert asked == [1]
    assert not teaches_now([turn("User", "Thanks, bye.")], never)  # nothing to read: no lookup


def test_a_confirmed_fix_after_tool_calls_is_learned_now() -> None:
    fixed = turn(
        "Assistant",
        "I flushed the DNS cache.",
        tools_used=[
            {"tool_name": "shell.run", "tool_data": {"cmd": "resolvectl flush-caches"}, "status": "ok"}
        ],
    )
    assert teaches_now([turn("User", "That fixed it, thanks!")], lambda: [fixed])
    assert not teaches_now([turn("User", "That didn't fix it.")], lambda: [fixed])


def test_a_corrected_fact_is_read_against_the_answer_and_its_request() -> None:
    asked = [
        turn("User", "Is the museum open on Mondays?"),
        turn("Assistant", "Yes, it opens at 9 every day."),
    ]
    assert teaches_now([turn("User", "It is closed on Mondays.")], lambda: asked)
    assert not teaches_now([turn("User", "I don't mind either way.")], lambda: asked)
