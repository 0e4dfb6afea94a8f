"""The numpy rank tests (stats/rank_tests.py) and the incomplete beta and t tail behind them
give scipy's numbers: seeded samples with and without ties, small and large, and the edges."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from benchlang.stats._special import t_sf
from benchlang.stats.rank_tests import kruskal, mann_whitney_p, mann_whitney_splits, spearman


def samples(seed: int, n: int, ties: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.lognormal(0.0, 0.5, n)
    return np.round(x, 1) if ties else x


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("n", [4, 9, 30, 500, 12_000])
def test_spearman_matches_scipy(n, ties):
    for seed in range(5):
        x = np.arange(n) % 7 if ties else samples(seed + 50, n, False)
        y = samples(seed, n, ties) + 0.002 * np.arange(n) * (seed % 2)
        rho, p = spearman(x, y)
        want = stats.spearmanr(x, y)
        assert rho == pytest.approx(want.statistic, rel=1e-12, abs=1e-15)
        assert p == pytest.approx(want.pvalue, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("sizes", [(3, 4), (9, 9, 12), (200, 250, 300, 10), (5_000, 4_000)])
def test_kruskal_matches_scipy(sizes, ties):
    for seed in range(5):
        groups = [samples(seed * 10 + i, s, ties) * (1 + 0.03 * i) for i, s in enumerate(sizes)]
        h, p = kruskal(*groups)
        want = stats.kruskal(*groups)
        assert h == pytest.approx(want.statistic, rel=1e-10)
        assert p == pytest.approx(want.pvalue, rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("sizes", [(3, 40), (9, 9), (30, 700), (1_000, 9_000)])
def test_mann_whitney_matches_scipy(sizes, ties):
    for seed in range(5):
        a = samples(seed, sizes[0], ties)
        b = samples(seed + 100, sizes[1], ties) * (1 + 0.05 * (seed % 3))
        want = stats.mannwhitneyu(a, b, alternative="two-sided").pvalue
        assert mann_whitney_p(a, b) == pytest.approx(want, rel=1e-9, abs=1e-300)


def test_edges_match_scipy():
    x = np.arange(20.0)
    assert spearman(x, 2 * x) == (1.0, 0.0) == tuple(stats.spearmanr(x, 2 * x))
    same = np.ones(12)
    assert mann_whitney_p(same, same) == stats.mannwhitneyu(same, same).pvalue == 1.0
    for t, df in [(0.0, 3), (2.5, 1), (-1.7, 10), (40.0, 9_998), (3.0, 2)]:
        assert t_sf(t, df) == pytest.approx(stats.t.sf(t, df), rel=1e-9, abs=1e-300)


def test_mann_whitney_splits_rank_once_and_match_scipy_per_split():
    x = samples(3, 2_000, True)
    rng = np.random.default_rng(4)
    masks = [rng.random(x.size) < q for q in (0.002, 0.1, 0.5)] + [np.arange(x.size) < 5]
    want = [stats.mannwhitneyu(x[m], x[~m], alternative="two-sided").pvalue for m in masks]
    assert mann_whitney_splits(x, masks) == pytest.approx(want, rel=1e-9, abs=1e-300)
