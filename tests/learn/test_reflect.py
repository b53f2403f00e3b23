"""The reflection policy: established harm stops a learning; help is never retired."""

from __future__ import annotations

import pytest

from reflexio.errors import ConflictError
from reflexio.learn.reflect import (
    Action,
    ExposureRow,
    contradicts,
    decide,
    replaces,
    status_after,
    summarize,
)
from reflexio.models.org_config import ReflectionPolicy
from reflexio.records import Learning, LearningKind, LearningStatus

POLICY = ReflectionPolicy()


def served(
    session: str, impact: str | None, success: bool | None = None, user: str | None = None
) -> ExposureRow:
    ok = impact == "positive" if success is None else success
    return ExposureRow(session, user or f"user-{session}", True, ok, impact)


def withheld(session: str, success: bool, user: str | None = None) -> ExposureRow:
    return ExposureRow(session, user or f"user-{session}", False, success)


def test_summary_counts_sessions_and_gives_intervals() -> None:
    rows = [served("s1", "negative"), served("s2", "positive"), served("s3", "neutral"), served("s4", None)]
    rows += [withheld("w1", True), withheld("w2", False)]
    impact = summarize(rows)
    assert (impact.served_sessions, impact.withheld_sessions) == (4, 2)
    assert (impact.helped, impact.hurt, impact.neutral, impact.unjudged) == (1, 1, 1, 1)
    assert impact.help_rate is not None and impact.help_rate[0] < 0.5 < impact.help_rate[1]
    assert impact.lift is not None and impact.lift.n == 6


def test_a_later_row_of_the_same_session_replaces_the_earlier_one() -> None:
    impact = summarize([served("s1", "negative"), served("s1", "positive")])
    assert (impact.served_sessions, impact.helped, impact.hurt) == (1, 1, 0)


def test_repeated_harm_without_offsetting_help_retires() -> None:
    impact = summarize([served(f"s{i}", "negative") for i in range(3)])
    decision = decide(impact, POLICY, approval_required=False)
    assert decision is not None and decision.action is Action.RETIRE
    assert "hurt 3 of the 3" in decision.reason and decision.evidence["hurt"] == 3


def test_with_approval_required_it_is_suspended_for_a_reviewer() -> None:
    impact = summarize([served(f"s{i}", "negative") for i in range(3)])
    decision = decide(impact, POLICY, approval_required=True)
    assert decision is not None and decision.action is Action.SUSPEND
    assert decision.reason.startswith("suspended for review")


def test_two_bad_sessions_are_not_enough() -> None:
    assert (
        decide(summarize([served("a", "negative"), served("b", "negative")]), POLICY, approval_required=False)
        is None
    )


def test_offsetting_help_prevents_retirement() -> None:
    rows = [served(f"n{i}", "negative") for i in range(3)] + [
        served("p1", "positive"),
        served("p2", "positive"),
    ]
    assert decide(summarize(rows), POLICY, approval_required=False) is None


@pytest.mark.parametrize("hurt", range(12))
def test_a_learning_that_helps_is_never_retired(hurt: int) -> None:
    rows = [served(f"n{i}", "negative") for i in range(hurt)] + [
        served(f"p{i}", "positive") for i in range(hurt + 1)
    ]
    assert decide(summarize(rows), POLICY, approval_required=False) is None


def test_a_lift_above_zero_protects_a_learning_however_it_is_judged() -> None:
    rows = [served(f"s{i}", "negative", success=True, user=f"u{i}") for i in range(30)]
    rows += [withheld(f"w{i}", False, user=f"v{i}") for i in range(30)]
    impact = summarize(rows)
    assert impact.lift is not None and impact.lift.above_zero
    assert decide(impact, POLICY, approval_required=False) is None


def test_a_lift_interval_below_zero_retires_once_both_arms_are_large_enough() -> None:
    rows = [served(f"s{i}", "neutral", success=i % 5 == 0, user=f"u{i % 12}") for i in range(25)]
    rows += [withheld(f"w{i}", i % 5 != 0, user=f"v{i % 12}") for i in range(25)]
    impact = summarize(rows)
    assert impact.lift is not None and impact.lift.below_zero
    decision = decide(impact, POLICY, approval_required=False)
    assert decision is not None and "95% interval" in decision.reason
    small = ReflectionPolicy(min_holdout_sessions=26)
    assert decide(impact, small, approval_required=False) is None


def test_a_disabled_policy_does_nothing() -> None:
    impact = summarize([served(f"s{i}", "negative") for i in range(10)])
    assert decide(impact, ReflectionPolicy(enabled=False), approval_required=False) is None


def test_status_moves_and_refusals() -> None:
    assert status_after(Action.RETIRE, LearningStatus.CURRENT) is LearningStatus.RETIRED
    assert status_after(Action.RETIRE, LearningStatus.SUSPENDED) is LearningStatus.RETIRED
    assert status_after(Action.SUSPEND, LearningStatus.CURRENT) is LearningStatus.SUSPENDED
    with pytest.raises(ConflictError, match="archived"):
        status_after(Action.SUSPEND, LearningStatus.ARCHIVED)


def test_a_newer_rule_that_says_the_opposite_contradicts_the_old_one() -> None:
    old = Learning(
        org_id="o",
        kind=LearningKind.USER_PLAYBOOK,
        id=1,
        content="Ask for confirmation before acting on servers.",
    )
    new = Learning(
        org_id="o",
        kind=LearningKind.USER_PLAYBOOK,
        id=2,
        content="Do not ask for confirmation on routine staging tasks, just do them.",
    )
    same = Learning(
        org_id="o",
        kind=LearningKind.USER_PLAYBOOK,
        id=3,
        content="Always ask for confirmation before acting on servers.",
    )
    assert contradicts(old, new) and not contradicts(old, same)


def _rule(id_: int, content: str, trigger: str) -> Learning:
    return Learning(org_id="o", kind=LearningKind.USER_PLAYBOOK, id=id_, content=content, trigger=trigger)


def test_a_correction_on_the_same_topic_replaces_the_rule_it_contradicted() -> None:
    old = _rule(1, "Give oven temperatures in Fahrenheit.", "the user asks for an oven temperature")
    new = _rule(2, "Always give the user Celsius", "When the user asks: what temperature for roasting")
    assert not contradicts(old, new)  # no polar word in common: the comparator sees no conflict
    assert replaces(old, new)


def test_a_lesson_on_another_topic_or_the_same_lesson_again_replaces_nothing() -> None:
    old = _rule(1, "Give oven temperatures in Fahrenheit.", "the user asks for an oven temperature")
    other = _rule(2, "Ask for the ticket number before resetting anything.", "a user asks to reset a laptop")
    again = _rule(3, "Give oven temperatures in Fahrenheit, always.", "the user asks for an oven temperature")
    assert not replaces(old, other) and not replaces(old, again)
