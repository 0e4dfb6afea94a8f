"""The replication test of `benchlang replicate` (stats.replication): the beta-binomial of
new KPIs inside published order statistics (Wilks 1942), against scipy and closed forms, and
its Type I error by simulation through the real variability score (exact: <= 5%)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlang.stats.replication import beta_binomial_cdf, inside_bounds_test
from benchlang.stats.sizing import binom_cdf
from benchlang.stats.variability import variability


def test_the_cdf_matches_scipy_and_the_closed_form():
    betabinom = pytest.importorskip("scipy.stats").betabinom
    for k, a, b in [(5, 4, 2), (8, 7, 2), (20, 13, 8), (30, 1, 3)]:
        for x in range(-1, k + 1):
            assert beta_binomial_cdf(x, k, a, b) == pytest.approx(
                betabinom.cdf(x, k, a, b), abs=1e-12
            )
    # none of 5 new values inside the range of 5 published ones: B(4, 7) / B(4, 2) = 1/42
    assert inside_bounds_test(np.array([9.0] * 5), 0, 1, 1, 5, 5).p_value == pytest.approx(1 / 42)
    # the sample range of n holds (n - 1) / (n + 1) on average (Wilks 1942)
    assert inside_bounds_test(np.array([0.5]), 0, 1, 1, 5, 5).expected_coverage == 4 / 6


@pytest.mark.parametrize(
    ("percentile", "confidence", "n", "k"),
    [(25, 75, 5, 5), (25, 75, 8, 8), (25, 75, 20, 20), (10, 75, 20, 20), (50, 75, 5, 5)],
)
def test_type_one_error_is_at_most_nominal_and_above_the_binomial(percentile, confidence, n, k):
    rng = np.random.default_rng(1942 + n + percentile)
    datasets = 2000
    exact = binomial = 0
    for _ in range(datasets):
        score = variability(rng.lognormal(0, 0.2, n), percentile, confidence)
        new = rng.lognormal(0, 0.2, k)
        test = inside_bounds_test(
            new, score.lower, score.upper, score.rank_lower, score.rank_upper, n
        )
        exact += test.p_value < 0.05
        mass = (score.percentile_high - score.percentile_low) / 100
        binomial += mass > 0 and float(binom_cdf(test.inside, k, mass)) < 0.05
    rate = exact / datasets
    assert rate <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / datasets)
    assert exact >= binomial, "the exact test is at least as powerful as the binomial one"


def test_a_thirty_percent_slowdown_is_found():
    rng = np.random.default_rng(7)
    found = 0
    for _ in range(500):
        score = variability(rng.lognormal(0, 0.05, 8), 25, 75)
        new = 1.3 * rng.lognormal(0, 0.05, 8)
        found += inside_bounds_test(new, score.lower, score.upper, 1, 8, 8).p_value < 0.05
    assert found >= 495, "power >= 99%"
