"""Impact statistics against a reference computation (statsmodels)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import statsmodels.api as sm
from statsmodels.stats.proportion import proportion_confint

from reflexio.learn.stats import clustered_difference, clustered_mean, wilson_interval


@pytest.mark.parametrize(("k", "n"), [(0, 1), (0, 4), (3, 3), (7, 19), (50, 100), (1, 1000)])
def test_wilson_matches_statsmodels(k: int, n: int) -> None:
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert wilson_interval(k, n) == pytest.approx((low, high), abs=1e-12)


def test_wilson_bounds_are_exact_at_the_edges() -> None:
    none_of, all_of = wilson_interval(0, 3), wilson_interval(3, 3)
    assert none_of is not None and none_of[0] == 0.0
    assert all_of is not None and all_of[1] == 1.0


def test_wilson_without_observations_says_nothing() -> None:
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def _sessions(seed: int, users: int, effect: float) -> tuple[list[float], list[bool], list[str]]:
    """Users with their own base rates (so their sessions are correlated), half the sessions treated."""
    rng = random.Random(seed)
    y, d, g = [], [], []
    for u in range(users):
        base = rng.uniform(0.2, 0.8)
        for _ in range(rng.randint(1, 8)):
            treated = rng.random() < 0.5
            y.append(float(rng.random() < min(1.0, base + (effect if treated else 0.0))))
            d.append(treated)
            g.append(f"user{u}")
    return y, d, g


def _reference(y: list[float], x: np.ndarray, g: list[str]) -> tuple[np.ndarray, np.ndarray]:
    codes = np.unique(np.asarray(g), return_inverse=True)[1]
    fit = sm.OLS(np.asarray(y), x).fit(cov_type="cluster", cov_kwds={"groups": codes}, use_t=True)
    return fit.params, fit.conf_int(alpha=0.05)


@pytest.mark.parametrize(
    ("seed", "users", "effect"), [(1, 12, 0.0), (2, 40, 0.2), (3, 5, -0.3), (4, 200, 0.05)]
)
def test_clustered_difference_matches_statsmodels(seed: int, users: int, effect: float) -> None:
    y, d, g = _sessions(seed, users, effect)
    params, ci = _reference(y, np.column_stack([np.ones(len(y)), np.asarray(d, dtype=float)]), g)
    got = clustered_difference(y, d, g)
    assert got.value == pytest.approx(params[1], abs=1e-12)
    assert (got.low, got.high) == pytest.approx((ci[1][0], ci[1][1]), abs=1e-10)
    assert got.clusters == users
    treated = [v for v, t in zip(y, d, strict=True) if t]
    control = [v for v, t in zip(y, d, strict=True) if not t]
    assert got.value == pytest.approx(np.mean(treated) - np.mean(control))


def test_clustered_mean_matches_statsmodels() -> None:
    y, _, g = _sessions(9, 15, 0.0)
    params, ci = _reference(y, np.ones((len(y), 1)), g)
    got = clustered_mean(y, g)
    assert got.value == pytest.approx(params[0])
    assert (got.low, got.high) == pytest.approx((ci[0][0], ci[0][1]), abs=1e-10)


def test_clustering_widens_the_interval_when_users_repeat_themselves() -> None:
    """Users who nearly always succeed or nearly always fail: their many sessions are worth a few."""
    rng = random.Random(5)
    y, g = [], []
    for u in range(12):
        rate = 0.95 if u % 2 else 0.05
        for _ in range(10):
            y.append(float(rng.random() < rate))
            g.append(f"user{u}")
    clustered = clustered_mean(y, g)
    naive = clustered_mean(y, [str(i) for i in range(len(y))])
    assert clustered.std_error is not None and naive.std_error is not None
    assert clustered.std_error > 2 * naive.std_error


def test_one_user_gives_no_interval() -> None:
    got = clustered_difference([1.0, 0.0, 1.0], [True, False, True], ["u", "u", "u"])
    assert got.value == pytest.approx(1.0)
    assert got.low is None and got.high is None and not got.below_zero and not got.above_zero


def test_an_empty_arm_is_refused() -> None:
    with pytest.raises(ValueError):
        clustered_difference([1.0, 0.0], [True, True], ["a", "b"])


def test_a_clear_harm_lies_below_zero() -> None:
    y = [0.0] * 30 + [1.0] * 30
    d = [True] * 30 + [False] * 30
    g = [f"u{i % 15}" for i in range(60)]
    got = clustered_difference(y, d, g)
    assert got.value == pytest.approx(-1.0) and got.below_zero
