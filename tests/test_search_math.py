"""The cohesion lift: siblings of a strong hit rise, nothing falls, scores stay in [0, 1]."""

from __future__ import annotations

import pytest

from reflexio.ranking import cohesion_boost


def test_a_strong_hit_lifts_its_siblings_past_an_equal_stranger() -> None:
    lifted = cohesion_boost([0.8, 0.3, 0.3], ["r1", "r1", "r2"], weight=0.3, leaders=1)
    assert lifted[1] == pytest.approx(0.3 + 0.7 * 0.3 * 0.8)
    assert lifted[2] == 0.3  # its group has no leader
    assert lifted[1] > lifted[2]


def test_no_score_falls_or_leaves_the_unit_interval() -> None:
    scores = [1.0, 0.9, 0.5, 0.0, 0.2]
    lifted = cohesion_boost(scores, ["a", "a", "b", "a", "b"], weight=1.0, leaders=5)
    assert all(s <= t <= 1.0 for s, t in zip(scores, lifted, strict=True))
    assert lifted[3] == pytest.approx(1.0)  # a full-weight lift from a perfect leader


def test_only_the_leaders_lift_and_the_best_leader_of_a_group_counts() -> None:
    scores = [0.9, 0.6, 0.5, 0.4]
    groups = ["a", "b", "b", "c"]
    lifted = cohesion_boost(scores, groups, weight=0.5, leaders=2)
    assert lifted[2] == pytest.approx(0.5 + 0.5 * 0.5 * 0.6)  # lifted by b's leader, 0.6
    assert lifted[3] == 0.4  # c has no leader among the best two


def test_learnings_without_a_request_are_never_grouped() -> None:
    assert cohesion_boost([0.9, 0.2], ["", ""], weight=0.5) == [0.9, 0.2]


def test_zero_weight_changes_nothing() -> None:
    assert cohesion_boost([0.9, 0.2], ["a", "a"], weight=0.0) == [0.9, 0.2]
