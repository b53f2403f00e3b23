"""Holdout assignment: deterministic, at the asked rate, independent across learnings and sessions."""

from __future__ import annotations

import hashlib

import pytest
from scipy import stats

from reflexio.learn.holdout import experiment_arm, unit_draw, withheld


def test_the_draw_is_the_sha256_of_its_parts() -> None:
    digest = hashlib.sha256(b"holdout\0o\0user_playbook\x007\0s1").digest()
    assert unit_draw("holdout", "o", "user_playbook", "7", "s1") == int.from_bytes(digest[:8], "big") / 2**64


def test_the_same_pair_always_gets_the_same_decision() -> None:
    first = [withheld("o", "agent_playbook", "12", f"s{i}", 0.3) for i in range(500)]
    again = [withheld("o", "agent_playbook", "12", f"s{i}", 0.3) for i in range(500)]
    assert first == again and any(first) and not all(first)


def test_rate_zero_never_withholds_and_rate_one_always_does() -> None:
    assert not any(withheld("o", "user_playbook", "1", f"s{i}", 0.0) for i in range(1000))
    assert all(withheld("o", "user_playbook", "1", f"s{i}", 1.0) for i in range(1000))


@pytest.mark.parametrize("rate", [0.05, 0.2, 0.5])
def test_sessions_are_withheld_at_the_rate(rate: float) -> None:
    n = 20_000
    hits = sum(withheld("o", "agent_playbook", "42", f"session-{i}", rate) for i in range(n))
    assert stats.binomtest(hits, n, rate).pvalue > 0.001


def test_learnings_are_withheld_independently_within_a_session() -> None:
    """Among sessions where learning A is withheld, B is withheld at the base rate (not always)."""
    rate, n = 0.3, 20_000
    both = a_only = 0
    for i in range(n):
        a = withheld("o", "agent_playbook", "A", f"s{i}", rate)
        b = withheld("o", "agent_playbook", "B", f"s{i}", rate)
        both += a and b
        a_only += a
    assert stats.binomtest(both, a_only, rate).pvalue > 0.001


def test_orgs_do_not_share_assignments() -> None:
    same = sum(
        withheld("org-a", "user_playbook", "5", f"s{i}", 0.5)
        == withheld("org-b", "user_playbook", "5", f"s{i}", 0.5)
        for i in range(4000)
    )
    assert stats.binomtest(same, 4000, 0.5).pvalue > 0.001


def test_experiment_arms_follow_the_percentage_and_change_with_the_experiment() -> None:
    users = [f"user{i}" for i in range(10_000)]
    arms = [experiment_arm("exp-1", u, 10.0) for u in users]
    assert stats.binomtest(arms.count("holdout"), len(users), 0.10).pvalue > 0.001
    again = [experiment_arm("exp-1", u, 10.0) for u in users]
    assert arms == again
    other = [experiment_arm("exp-2", u, 10.0) for u in users]
    overlap = sum(a == b == "holdout" for a, b in zip(arms, other, strict=True))
    assert overlap < arms.count("holdout") / 2  # a new experiment draws a new holdout
