"""Ranking math: the fused score's full-text floor and weight, the cohesion lift and the arms'
first hits' seats."""

from __future__ import annotations

import numpy as np
import pytest

from reflexio.ranking import (
    FTS_FLOOR_RANK,
    FusionWeights,
    cohesion_boost,
    fts_spread,
    fused_score,
    seat_leaders,
)


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


def test_without_a_measured_spread_the_fused_score_is_the_weighted_mean() -> None:
    w = FusionWeights(vector=0.4, fts=0.6)
    assert fused_score(0.5, 0.25, w) == pytest.approx(0.4 * 0.5 + 0.6 * 0.25)
    assert fused_score(0.5, None, w) == 0.5 and fused_score(None, 0.25, w) == 0.25  # one arm: its score


def test_a_share_many_rows_reach_is_no_evidence_and_a_weak_best_gives_the_arm_little_say() -> None:
    w = FusionWeights(vector=0.4, fts=0.6)
    # Nothing rises above the floor: the cosine decides alone, undiluted.
    assert fused_score(0.45, 0.3, w, fts_best=0.3, fts_floor=0.3) == pytest.approx(0.45)
    assert fused_score(0.45, 0.0, w, fts_best=0.0) == pytest.approx(0.45)
    # A strong semantic match beats a row that only shares a weak best match's words ...
    paraphrase = fused_score(0.45, 0.0, w, fts_best=0.25, fts_floor=0.2)
    common_word = fused_score(0.30, 0.25, w, fts_best=0.25, fts_floor=0.2)
    assert paraphrase > common_word
    # ... which the plain mean got the other way round.
    assert fused_score(0.45, 0.0, w) < fused_score(0.30, 0.25, w)
    # A full lexical match keeps the plain mean's weight.
    assert fused_score(0.3, 0.9, w, fts_best=1.0) == pytest.approx(0.4 * 0.3 + 0.6 * 0.9)


def test_fused_scores_stay_in_the_unit_interval_and_lexical_evidence_never_lowers_one() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        best, floor = sorted(rng.uniform(0, 1, 2), reverse=True)
        cosine, share = rng.uniform(-0.2, 1.1), rng.uniform(0, best)
        score = fused_score(cosine, share, fts_best=best, fts_floor=floor)
        assert 0.0 <= score <= 1.0
        assert score >= fused_score(cosine, share * 0.5, fts_best=best, fts_floor=floor) - 1e-12


def test_the_spread_is_the_best_share_and_the_share_at_the_floor_rank() -> None:
    shares = [0.9, 0.1, 0.0, *np.linspace(0.5, 0.2, FTS_FLOOR_RANK)]
    best, floor = fts_spread(shares)
    assert best == 0.9
    assert floor == pytest.approx(sorted(s for s in shares if s > 0)[-FTS_FLOOR_RANK])
    assert fts_spread([0.4, 0.3, 0.0]) == (0.4, 0.0)  # fewer matches than the floor rank
    assert fts_spread([]) == (0.0, 0.0)


def test_an_arms_first_hit_is_seated_within_the_first_places_and_scores_still_fall() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5]
    assert seat_leaders(scores, [False, False, False, False, True], slots=3) == [
        (0, 0.9),
        (1, 0.8),
        (4, 0.7),  # takes the score of the best row it moves past
        (2, 0.7),
        (3, 0.6),
    ]
    both = seat_leaders(scores, [False, False, False, True, True], slots=3)
    assert [i for i, _ in both] == [0, 3, 4, 1, 2]
    served = [s for _, s in both]
    assert served == sorted(served, reverse=True)


def test_leaders_already_seated_and_lists_without_leaders_are_left_as_they_are() -> None:
    scores = [0.9, 0.8, 0.7, 0.6]
    unchanged = list(enumerate(scores))
    assert seat_leaders(scores, [False] * 4) == unchanged
    assert seat_leaders(scores, [True, False, True, False], slots=3) == unchanged
    assert seat_leaders([0.9, 0.2], [False, True], slots=3) == [(0, 0.9), (1, 0.2)]
    assert seat_leaders([], []) == []
