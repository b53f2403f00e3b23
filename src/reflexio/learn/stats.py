"""The statistics behind impact: proportions, their intervals, and lifts clustered by user.

Pure functions over plain numbers, tested against statsmodels. Two questions recur:

* *How often did a learning help?* A share of judged sessions (helped among helped + hurt),
  reported with a Wilson score interval, which stays inside [0, 1] and is honest at the small
  counts a new learning has (two sessions, both bad, do not make a certainty).
* *Did serving it change outcomes?* The difference in success rate between sessions that were
  served a learning and sessions it was withheld from (the holdout), or between the arms of a
  retrieval experiment. Sessions of one user are not independent draws — the same person,
  the same habits, often the same problem — so the interval is cluster-robust by user: the
  linear-probability regression ``success ~ 1 + served`` with the CR1 sandwich variance
  (statsmodels' ``cov_type="cluster"``: small-sample factor G/(G-1) · (N-1)/(N-K)) and a
  Student t quantile with G-1 degrees of freedom. With one cluster nothing can be said, and
  no interval is returned rather than a misleading one.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

__all__ = ["Estimate", "clustered_difference", "clustered_mean", "wilson_interval"]


@dataclass(frozen=True, slots=True)
class Estimate:
    """A point estimate with its 95 % (or other) interval.

    Attributes:
        value: The estimate.
        low: Lower end of the interval (None when it cannot be computed).
        high: Upper end of the interval.
        std_error: Cluster-robust standard error (None with the interval).
        n: Observations behind it.
        clusters: Distinct clusters (users) behind it.
    """

    value: float
    low: float | None
    high: float | None
    std_error: float | None
    n: int
    clusters: int

    @property
    def below_zero(self) -> bool:
        """The whole interval lies below zero (the effect is negative at this confidence)."""
        return self.high is not None and self.high < 0

    @property
    def above_zero(self) -> bool:
        """The whole interval lies above zero."""
        return self.low is not None and self.low > 0


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """Wilson score interval of a binomial proportion; None when there is no observation.

    Raises:
        ValueError: Counts out of range.
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return None
    z = float(scipy_stats.norm.ppf(0.5 + confidence / 2))
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    # At 0 of n (n of n) the bound is exactly 0 (1); the float sum leaves a 1e-17 residue.
    low = 0.0 if successes == 0 else max(0.0, centre - margin)
    high = 1.0 if successes == n else min(1.0, centre + margin)
    return low, high


def clustered_mean(
    values: Sequence[float], clusters: Sequence[Hashable], confidence: float = 0.95
) -> Estimate:
    """The mean of ``values`` with a cluster-robust interval (intercept-only regression).

    Raises:
        ValueError: Empty input or lengths that differ.
    """
    y = _as_array(values, clusters)
    x = np.ones((len(y), 1))
    return _ols_clustered(y, x, clusters, confidence, coefficient=0)


def clustered_difference(
    outcomes: Sequence[float],
    treated: Sequence[bool],
    clusters: Sequence[Hashable],
    confidence: float = 0.95,
) -> Estimate:
    """Mean outcome of the treated minus that of the others, with a cluster-robust interval.

    This is the coefficient of ``treated`` in ``outcome ~ 1 + treated``; with 0/1 outcomes it
    is the difference in success rates.

    Raises:
        ValueError: Empty input, lengths that differ, or one arm empty.
    """
    y = _as_array(outcomes, clusters)
    if len(treated) != len(y):
        raise ValueError("outcomes, treated and clusters must have the same length")
    d = np.asarray(treated, dtype=float)
    if d.min() == d.max():
        raise ValueError("both arms need at least one observation")
    x = np.column_stack([np.ones(len(y)), d])
    return _ols_clustered(y, x, clusters, confidence, coefficient=1)


def _as_array(values: Sequence[float], clusters: Sequence[Hashable]) -> np.ndarray:
    if not values:
        raise ValueError("no observations")
    if len(values) != len(clusters):
        raise ValueError("values and clusters must have the same length")
    return np.asarray(values, dtype=float)


def _ols_clustered(
    y: np.ndarray, x: np.ndarray, clusters: Sequence[Hashable], confidence: float, *, coefficient: int
) -> Estimate:
    """OLS with the CR1 cluster-robust variance; the interval of one coefficient."""
    n, k = x.shape
    bread = np.linalg.inv(x.T @ x)
    beta = bread @ x.T @ y
    residuals = y - x @ beta
    groups: dict[Hashable, list[int]] = {}
    for row, cluster in enumerate(clusters):
        groups.setdefault(cluster, []).append(row)
    g = len(groups)
    value = float(beta[coefficient])
    if g < 2 or n <= k:
        return Estimate(value, None, None, None, n, g)
    meat = np.zeros((k, k))
    for rows in groups.values():
        score = x[rows].T @ residuals[rows]
        meat += np.outer(score, score)
    factor = g / (g - 1) * (n - 1) / (n - k)
    covariance = factor * bread @ meat @ bread
    se = float(math.sqrt(max(covariance[coefficient, coefficient], 0.0)))
    t = float(scipy_stats.t.ppf(0.5 + confidence / 2, df=g - 1))
    return Estimate(value, value - t * se, value + t * se, se, n, g)
