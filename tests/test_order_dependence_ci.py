"""Order-statistic median CI ranks (Le Boudec, Thm 2.1): properties and simulated coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlang.stats.order_dependence import median_ci_ranks

levels = st.floats(min_value=0.5, max_value=0.999, allow_nan=False)


def exact_coverage(n: int, j: int, k: int) -> float:
    """P(X_(j) <= median < X_(k)) = P(j <= #samples below the median <= k - 1)."""
    return sum(math.comb(n, i) for i in range(j, k)) / 2**n


@settings(max_examples=300, deadline=None, derandomize=True)
@given(n=st.integers(min_value=1, max_value=400), level=levels)
def test_ranks_are_valid_symmetric_and_tightest(n, level):
    j, k, achieved = (
        int(x) if i < 2 else float(x) for i, x in enumerate(median_ci_ranks(n, level))
    )
    assert 1 <= j <= k <= n
    assert j + k == n + 1
    if n >= 2:
        assert achieved == pytest.approx(exact_coverage(n, j, k), abs=1e-12)
    feasible = 2.0 ** (1 - n) <= 1 - level
    if feasible:
        assert achieved >= level - 1e-12
        if j + 1 < k - 1:
            assert exact_coverage(n, j + 1, k - 1) < level
    else:
        assert (j, k) == (1, n)
        assert achieved < level


def test_vectorised_over_n_matches_scalar_calls():
    ns = np.arange(1, 301)
    j, k, achieved = median_ci_ranks(ns, 0.95)
    for n in (1, 2, 5, 6, 7, 50, 171, 300):
        sj, sk, sa = median_ci_ranks(n, 0.95)
        assert (j[n - 1], k[n - 1], achieved[n - 1]) == (sj, sk, sa)
    assert np.all(np.diff(k - j) >= -1)


def test_known_ranks():
    # Le Boudec, Table A.1-style values: n = 10 at 95% is [X_(2), X_(9)];
    # at 1 - 0.05/20 the interval is [min, max] (OrderSage Table 5).
    assert tuple(int(x) for x in median_ci_ranks(10, 0.95)[:2]) == (2, 9)
    assert tuple(int(x) for x in median_ci_ranks(10, 0.9975)[:2]) == (1, 10)
    assert tuple(int(x) for x in median_ci_ranks(100, 0.95)[:2]) == (40, 61)
    with pytest.raises(ValueError):
        median_ci_ranks(0, 0.95)
    with pytest.raises(ValueError):
        median_ci_ranks(10, 1.0)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(n=st.integers(min_value=6, max_value=120), level=st.sampled_from([0.9, 0.95, 1 - 0.05 / 3]))
def test_simulated_coverage_reaches_level(n, level):
    """Seeded, vectorised: 4000 samples of size n from a skewed law with known median ln 2."""
    trials = 4000
    j, k, achieved = median_ci_ranks(n, level)
    if achieved < level:
        return
    rng = np.random.default_rng(1000 * n + round(level * 1000))
    x = np.sort(rng.exponential(size=(trials, n)), axis=1)
    covered = (x[:, j - 1] <= math.log(2)) & (math.log(2) <= x[:, k - 1])
    se = math.sqrt(achieved * (1 - achieved) / trials)
    assert covered.mean() >= level - 4 * se
    assert covered.mean() == pytest.approx(achieved, abs=4 * se + 1e-9)


@pytest.mark.parametrize("level", [0.95, 1 - 0.05 / 3])
def test_simulated_coverage_over_many_samples(level):
    """20000 seeded samples per n, uniform law (median 1/2), all n at once per size."""
    trials = 20_000
    rng = np.random.default_rng(20230710)
    for n in (10, 25, 50, 100):
        j, k, achieved = median_ci_ranks(n, level)
        x = np.sort(rng.random(size=(trials, n)), axis=1)
        coverage = ((x[:, j - 1] <= 0.5) & (x[:, k - 1] >= 0.5)).mean()
        se = math.sqrt(achieved * (1 - achieved) / trials)
        assert achieved >= level
        assert coverage >= level - 4 * se
        assert coverage == pytest.approx(achieved, abs=4 * se)
