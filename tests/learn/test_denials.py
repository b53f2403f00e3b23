"""Flat contradictions of what the agent just said, and the replies that only look like them."""

from __future__ import annotations

import pytest

from reflexio.learn.rules.denials import answers_no, asks, denies

DENIALS = [
    ("I've waived the overdraft fee as a one-time courtesy!", "There is no courtesy waiver."),
    ("Your package was delivered yesterday at 4pm.", "No, the package never arrived."),
    ("I've issued the refund to your card.", "I never got the refund."),
    ("The pharmacy is open until midnight.", "The pharmacy isn't open that late any more."),
    ("Your subscription includes free cloud backups.", "Backups are no longer included in my plan."),
    ("The 9:15 train goes direct to Leeds.", "That train doesn't go to Leeds, it stops at York."),
    ("I've cancelled the standing order.", "The standing order wasn't cancelled, it went out today."),
    ("Premium members get lounge access.", "Lounge access isn't part of premium."),
]

NOT_DENIALS = [
    ("Anything else I can help you with?", "No, thanks."),  # answers a question
    ("Would you like me to book a taxi too?", "No, I'll walk."),
    ("Refunds need the original receipt.", "I don't have a receipt."),  # the user's own state
    ("There is no fee for paper statements.", "Right, no fee then."),  # agrees with a negative
    ("I've booked you on the 9am train.", "That's no problem, thanks!"),  # not about the claim
    ("Your flight is confirmed for Tuesday.", "Great, thank you."),
    ("The pharmacy is open until midnight.", "Isn't it closed on Sundays?"),  # a question
    ("Did the restart fix it?", "Not yet, it is still slow."),  # no claim to deny
]


@pytest.mark.parametrize(("answer", "reply"), DENIALS)
def test_a_reply_that_negates_what_the_agent_claimed_denies_it(answer: str, reply: str) -> None:
    assert denies(reply, answer)


@pytest.mark.parametrize(("answer", "reply"), NOT_DENIALS)
def test_answers_agreements_and_other_negations_do_not(answer: str, reply: str) -> None:
    assert not denies(reply, answer)


def test_a_no_answers_only_a_closing_question() -> None:
    assert asks("I've reset it. Did that help?") and not asks("Did it help? I've reset it.")
    assert answers_no("No, thanks.", "Anything else?") == "thanks."
    assert answers_no("Nope", "Anything else?") == ""
    assert answers_no("No, the fee was charged twice.", "I've refunded the fee.") is None
    assert answers_no("Thanks!", "Anything else?") is None
