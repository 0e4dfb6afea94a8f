"""Exact small-sample p-values for the rank statistics (Kendall & Gibbons 1990 §3; Kruskal &
Wallis 1952 §6): Spearman's trend test in the independence test and position effects, and
Kruskal-Wallis in order dependence. Checked against full enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from benchlang.stats.independence import independence, independence_batch
from benchlang.stats.order_dependence import kruskal_h
from benchlang.stats.rank_exact import kruskal_exact_p, spearman_exact_p


def test_five_monotone_values_have_exact_spearman_p_0_0167():
    res = independence([1.0, 2.0, 3.0, 4.0, 5.0])
    assert res.trend_p == pytest.approx(2 / 120) == pytest.approx(0.0167, abs=5e-5)
    down = independence([5.0, 4.0, 3.0, 2.0, 1.0])
    assert down.trend_p == pytest.approx(2 / 120)
    assert not down.stationary and "Spearman p = 0.0167" in down.reason
    assert spearman_exact_p(np.arange(5), np.arange(5.0)) == pytest.approx(2 / 120)


def _brute(x: np.ndarray, y: np.ndarray) -> float:
    r0 = stats.spearmanr(x, y)[0]
    hits = [
        abs(stats.spearmanr(x, y[list(p)])[0]) >= abs(r0) - 1e-12
        for p in itertools.permutations(range(y.size))
    ]
    return float(np.mean(hits))


@pytest.mark.parametrize("n", [4, 5, 6])
def test_exact_spearman_equals_enumeration_with_and_without_ties(n):
    rng = np.random.default_rng(n)
    y = rng.normal(size=n)
    assert spearman_exact_p(np.arange(n), y) == pytest.approx(_brute(np.arange(n), y))
    tied = rng.integers(0, 3, n).astype(float)
    if np.ptp(tied) > 0:
        assert spearman_exact_p(tied, y) == pytest.approx(_brute(tied, y))


def test_batch_uses_exact_p_up_to_ten_values_and_t_above():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(6, 10))
    got = independence_batch(x)["trend_p"]
    want = [spearman_exact_p(np.arange(10), row) for row in x]
    assert got == pytest.approx(want)
    big = rng.normal(size=(3, 30))
    t_approx = [stats.spearmanr(np.arange(30), row).pvalue for row in big]
    assert independence_batch(big)["trend_p"] == pytest.approx(t_approx, rel=1e-9)


def test_iid_rows_pass_at_least_nominally_with_exact_p():
    """Exact tests are conservative (discrete): i.i.d. rows of 8 values are rejected for a
    trend at most alpha/2 = 2.5% of the time (4,000 seeded rows)."""
    x = np.random.default_rng(11).normal(size=(4000, 8))
    rejected = (independence_batch(x)["trend_p"] <= 0.025).mean()
    assert rejected <= 0.025 + 3 * np.sqrt(0.025 * 0.975 / 4000)


def test_exact_kruskal_wallis_matches_the_permutation_distribution():
    rng = np.random.default_rng(3)
    groups = [rng.normal(size=s) + 0.6 * i for i, s in enumerate((3, 3, 4))]
    full = stats.permutation_test(
        groups,
        lambda *g: stats.kruskal(*g).statistic,
        permutation_type="independent",
        alternative="greater",
        n_resamples=np.inf,
    ).pvalue
    assert kruskal_exact_p(*groups) == pytest.approx(full)
    assert kruskal_h(*groups)[1] == pytest.approx(full)
    a, b = np.arange(1.0, 6.0), np.arange(6.0, 11.0)
    assert kruskal_h(a, b)[1] == pytest.approx(2 / 252)  # chi-square would say 0.0090
    assert kruskal_exact_p(np.arange(40.0), np.arange(40.0) + 0.5) is None  # too many splits
