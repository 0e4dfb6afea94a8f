"""The rate of A/A false positives (stats/binomial_rate.py): Clopper & Pearson's interval from
its defining equations (Biometrika 26(4) 1934: the two one-sided binomial tails equal (1-c)/2 at
its ends), and the band of an honest test's rate (Bakshy & Frachtenberg WWW 2015 Fig. 8)
holding at least its confidence, by exact binomial sums, at every rate including 0 and 1."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from benchlang.stats.binomial_rate import binomial_band, clopper_pearson


@pytest.mark.parametrize("count,runs", [(0, 1), (1, 1), (0, 20), (3, 10), (7, 200), (50, 50)])
def test_clopper_pearson_solves_its_two_tail_equations(count, runs):
    ci = clopper_pearson(count, runs, 0.95)
    assert ci.rate == count / runs and ci.low <= ci.rate <= ci.high
    if count > 0:  # P(X >= k | low) = 2.5%
        assert binom.sf(count - 1, runs, ci.low) == pytest.approx(0.025, abs=1e-9)
    else:
        assert ci.low == 0.0
    if count < runs:  # P(X <= k | high) = 2.5%
        assert binom.cdf(count, runs, ci.high) == pytest.approx(0.025, abs=1e-9)
    else:
        assert ci.high == 1.0


def test_clopper_pearson_covers_at_least_its_confidence_at_every_rate():
    """Exact coverage sum_k P(k) [p in CI(k)] over a grid of true rates, n = 30."""
    n = 30
    cis = [clopper_pearson(k, n) for k in range(n + 1)]
    for p in np.linspace(0.0, 1.0, 101):
        inside = [k for k, ci in enumerate(cis) if ci.low <= p <= ci.high]
        assert binom.pmf(inside, n, p).sum() >= 0.95 - 1e-12


@pytest.mark.parametrize("rate", [0.0, 0.01, 0.05, 0.5, 1.0])
def test_the_band_holds_an_honest_rate_with_at_least_its_confidence(rate):
    runs = np.array([1, 5, 10, 37, 100, 1000])
    band = binomial_band(runs, rate)
    for n, (lo, hi) in zip(runs, band, strict=True):
        k = np.arange(n + 1)
        inside = (k / n >= lo) & (k / n <= hi)
        assert binom.pmf(k[inside], n, rate).sum() >= 0.95 - 1e-12


def test_nonsense_is_refused_not_turned_into_nan():
    """Before: runs 0 gave NaN with a RuntimeWarning, a rate of 1.5 gave [nan, nan] silently."""
    for runs, rate in ((0, 0.05), (np.array([10, 0]), 0.05), (2.5, 0.05), (10, 1.5), (10, -0.1)):
        with pytest.raises(ValueError):
            binomial_band(runs, rate)
    with pytest.raises(ValueError):
        clopper_pearson(2.5, 10)
    with pytest.raises(ValueError):
        clopper_pearson(11, 10)
