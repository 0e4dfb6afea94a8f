"""The fast forms analyze uses at scale give the numbers of the forms they
replace: the median CI's binomial from scipy's kernels without ``scipy.stats``, the ranking
basis's one-key sort beside the lexsort it falls back to, the family's vectorised bootstrap
quantiles beside numpy's nan forms."""

from __future__ import annotations

import types

import numpy as np
import pytest

from benchlang.report.ranking_basis import _joint_key, ran_in_blocks
from benchlang.stats.order_dependence import _REL_TOL, median_ci_ranks
from benchlang.stats.simultaneous import balanced_max


@pytest.mark.parametrize("level", [0.9, 0.95, 0.995, 1 - 0.05 / 45])
def test_median_ci_ranks_are_scipy_binomials(level: float) -> None:
    stats = pytest.importorskip("scipy.stats")
    n = np.concatenate([np.arange(1, 400), np.arange(400, 60_000, 997)])
    tail = (1.0 - level) / 2.0
    t = stats.binom.ppf(tail, n, 0.5).astype(np.int64)
    t = np.where(stats.binom.cdf(t, n, 0.5) <= tail * (1 + _REL_TOL), t, t - 1)
    j = np.clip(t + 1, 1, (n + 1) // 2)
    achieved = np.where(n + 1 - j > j, 1.0 - 2.0 * stats.binom.cdf(j - 1, n, 0.5), 0.0)
    got_j, got_k, got_achieved = median_ci_ranks(n, level)
    assert np.array_equal(got_j, j)
    assert np.array_equal(got_k, n + 1 - j)
    assert np.array_equal(got_achieved, achieved)


def _table(rounds: np.ndarray, configuration: np.ndarray, series: np.ndarray):
    hosts = np.where(np.arange(rounds.size) % 2 == 0, "a", "b").astype(object)
    return types.SimpleNamespace(
        host=hosts, configuration=configuration, round=rounds, series=series
    )


@pytest.mark.parametrize("blocks", [True, False])
def test_ran_in_blocks_one_key_and_lexsort_agree(blocks: bool) -> None:
    rng = np.random.default_rng(53)
    n = 2_000
    configuration = rng.integers(0, 5, n)
    rounds = configuration.copy() if blocks else rng.integers(0, 40, n)
    series = rng.integers(0, 3, n)
    mask = rng.random(n) < 0.9
    small = _table(rounds, configuration, series)
    # rounds numbered past 2**62 / (hosts x series x configurations): no joint key, lexsort
    huge = _table(rounds + 2**61, configuration, series)
    assert _joint_key((huge.round, huge.configuration)) is None
    assert ran_in_blocks(small, mask) is blocks
    assert ran_in_blocks(huge, mask) is blocks


def test_balanced_max_vectorised_equals_nan_forms() -> None:
    rng = np.random.default_rng(47)
    diff = rng.normal(size=(2_000, 9))
    low, high, d = balanced_max(diff, 95.0)
    a = 0.025
    center = np.nanmedian(diff, axis=0)
    assert np.array_equal(low, np.nanquantile(diff, a, axis=0) - center)
    assert np.array_equal(high, np.nanquantile(diff, 1 - a, axis=0) - center)
    with_nan = diff.copy()
    with_nan[:5, 2] = np.nan
    low_nan, _, _ = balanced_max(with_nan, 95.0)
    assert np.array_equal(
        low_nan, np.nanquantile(with_nan, a, axis=0) - np.nanmedian(with_nan, axis=0)
    )
    assert d >= 1.0
