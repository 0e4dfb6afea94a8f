"""Sizing, KPI, variability score and CDF band (TriScale §4.2, §4.3, §4.5, §5.4)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats
from scipy.optimize import brentq

from benchlang.stats import cdf_band, independence, kpi, sizing, variability
from benchlang.stats._orderstat import lower_rank, min_samples, two_sided_ranks, upper_rank


@pytest.mark.parametrize(
    ("p", "c", "n"), [(95, 95, 59), (95, 99, 90), (99, 95, 299), (90, 95, 29), (50, 95, 5)]
)
def test_table2_of_the_paper(p, c, n):
    assert sizing(p, c) == n
    assert sizing(100 - p, c) == n


def test_sizing_with_excluded_samples_is_the_binomial_tail():
    for p, c, r in [(95, 95, 1), (99, 99.9, 3), (50, 95, 2), (90, 75, 5)]:
        n = sizing(p, c, r)
        q = p / 100
        assert stats.binom.cdf(n - r - 1, n, q) >= c / 100
        assert stats.binom.cdf(n - r - 2, n - 1, q) < c / 100


def test_sizing_rejects_bad_input():
    for args in [(0, 95), (100, 95), (95, 0), (95, 100), (95, 95, -1), (95, 95, 1.5)]:
        with pytest.raises(ValueError):
            sizing(*args)


def test_side_specific_min_samples():
    # an upper bound of a low percentile needs few samples, a lower bound of it many
    assert min_samples(0.05, 0.95, "upper") == 1
    assert min_samples(0.05, 0.95, "lower") == 59
    assert min_samples(0.95, 0.95, "upper") == 59


def test_kpi_median_by_hand():
    # N=10, p=0.5: P(Bin(10,.5) <= k-1) first reaches 95% at k-1=8 (0.9893); k-1=7 gives 0.9453
    values = np.array([7.0, 3, 9, 1, 5, 10, 2, 8, 4, 6])
    k = kpi(values, 50, 95, "upper")
    assert k.rank == 9 and k.value == 9.0
    assert k.achieved_confidence == pytest.approx(100 * 1013 / 1024)
    low = kpi(values, 50, 95, "lower")
    assert low.rank == 2 and low.value == 2.0
    assert low.achieved_confidence == pytest.approx(100 * 1013 / 1024)


def test_kpi_p95_at_exactly_59_is_the_maximum():
    values = np.arange(59.0)[::-1]
    k = kpi(values, 95, 95)
    assert k.rank == 59 and k.value == 58.0
    assert k.achieved_confidence == pytest.approx(100 * (1 - 0.95**59))
    assert k.n == 59 and k.min_n == 59


def test_kpi_too_few_samples_gives_nan_and_min_n():
    k = kpi(np.arange(20.0), 95, 95)
    assert math.isnan(k.value) and k.rank is None and k.min_n == 59 and k.n == 20
    assert not k.enough


def test_kpi_drops_nan_and_reports_independence():
    rng = np.random.default_rng(4)
    values = rng.normal(size=40)
    values[[3, 17]] = np.nan
    k = kpi(values, 50, 95)
    assert k.n == 38
    assert k.independence == independence(values[np.isfinite(values)])
    trend = kpi(np.arange(40.0), 50, 95)
    assert not trend.independent and not trend.independence.stationary
    json.dumps(k.to_dict())


def test_ranks_are_mirror_images():
    for n, p, c in [(30, 0.9, 0.95), (100, 0.25, 0.75), (7, 0.5, 0.9)]:
        ku, cu = upper_rank(n, p, c)
        kl, cl = lower_rank(n, 1 - p, c)
        assert kl == n + 1 - ku and cl == pytest.approx(cu)


def test_two_sided_median_interval_by_hand():
    # Le Boudec Table A.1 style: N=10 at 95% -> [X_(2), X_(9)], coverage 1 - 2*11/1024
    lo, hi, cov = two_sided_ranks(10, 0.5, 0.95)
    assert (lo, hi) == (2, 9)
    assert cov == pytest.approx(1 - 2 * 11 / 1024)


def test_variability_by_hand_and_joint_level():
    kpis = np.arange(1.0, 11.0)
    v = variability(kpis, 25, 75)
    # lower bound of p25: largest k with P(Bin(10,.25) >= k) >= .75 -> k=2 (0.756)
    assert (v.rank_lower, v.rank_upper) == (2, 9)
    assert (v.lower, v.upper, v.score) == (2.0, 9.0, 7.0)
    assert v.relative == pytest.approx(7.0 / 5.5)
    c = 1 - stats.binom.cdf(1, 10, 0.25)
    assert v.joint_confidence == pytest.approx(100 * (2 * c - 1))
    assert v.joint_confidence >= 2 * 75 - 100 and not v.joint_exact
    assert variability(kpis, 75, 75).score == v.score


def test_variability_at_the_median_is_the_exact_two_sided_interval():
    v = variability(np.arange(1.0, 11.0), 50, 95)
    lo, hi, cov = two_sided_ranks(10, 0.5, 0.9)
    assert v.joint_exact and (v.rank_lower, v.rank_upper) == (lo, hi)
    assert v.joint_confidence == pytest.approx(100 * cov)


def test_variability_too_few_series():
    v = variability([1.0, 2.0, 3.0], 25, 75)
    assert math.isnan(v.score) and v.min_n == 5 and v.n == 3 and not v.enough


def test_cdf_band_matches_kpi_per_percentile():
    rng = np.random.default_rng(9)
    x = rng.lognormal(size=200)
    band = cdf_band(x, confidence=95)
    assert band.percentiles[0] == 2 and band.percentiles[-1] == 98
    for i in (0, 40, 48, 90, 96):
        p = band.percentiles[i]
        up, lo = kpi(x, p, 95, "upper"), kpi(x, p, 95, "lower")
        assert band.upper[i] == up.value or (math.isnan(up.value) and math.isnan(band.upper[i]))
        assert band.lower[i] == lo.value or (math.isnan(lo.value) and math.isnan(band.lower[i]))
    finite = np.isfinite(band.lower) & np.isfinite(band.upper)
    assert np.all(band.lower[finite] <= band.upper[finite])
    assert np.all(np.diff(band.upper[np.isfinite(band.upper)]) >= 0)
    only = cdf_band(x, [10, 90], 90, "lower")
    assert np.all(np.isnan(only.upper)) and np.all(np.isfinite(only.lower))


def _bimodal_ppf(q: float) -> float:
    def cdf(v):
        return 0.6 * stats.norm.cdf(v, 0, 1) + 0.4 * stats.norm.cdf(v, 6, 1.5)

    return brentq(lambda v: cdf(v) - q, -20, 30)


def _draw(rng, name, shape):
    if name == "normal":
        return rng.normal(size=shape)
    if name == "lognormal":
        return rng.lognormal(0.0, 1.0, size=shape)
    if name == "exponential":
        return rng.exponential(size=shape)
    if name == "pareto":
        return stats.pareto.ppf(rng.random(size=shape), 2.5)
    mix = rng.random(size=shape) < 0.6
    return np.where(mix, rng.normal(0, 1, size=shape), rng.normal(6, 1.5, size=shape))


def _true_quantile(name, q):
    return {
        "normal": lambda: stats.norm.ppf(q),
        "lognormal": lambda: stats.lognorm.ppf(q, 1.0),
        "exponential": lambda: stats.expon.ppf(q),
        "pareto": lambda: stats.pareto.ppf(q, 2.5),
        "bimodal": lambda: _bimodal_ppf(q),
    }[name]()


CASES = [
    (50, 95, "upper", 0),
    (95, 95, "upper", 0),
    (90, 99, "upper", 11),
    (25, 75, "lower", 3),
    (10, 90, "lower", 0),
    (99, 90, "upper", 0),
]


@pytest.mark.parametrize("dist", ["normal", "lognormal", "exponential", "bimodal", "pareto"])
def test_kpi_coverage_by_simulation(dist):
    """Each bound covers the true percentile in >= C of 10,000 seeded series (vectorised)."""
    reps = 10_000
    rng = np.random.default_rng(len(dist) * 7919)
    for p, c, bound, extra in CASES:
        n = min_samples(p / 100, c / 100, bound) + extra
        rank, achieved = (
            upper_rank(n, p / 100, c / 100) if bound == "upper" else lower_rank(n, p / 100, c / 100)
        )
        x = _draw(rng, dist, (reps, n))
        ref = kpi(x[0], p, c, bound)
        assert ref.rank == rank and ref.value == np.sort(x[0])[rank - 1]
        kth = np.partition(x, rank - 1, axis=1)[:, rank - 1]
        truth = _true_quantile(dist, p / 100)
        covered = np.mean(kth >= truth) if bound == "upper" else np.mean(kth <= truth)
        se = math.sqrt(achieved * (1 - achieved) / reps)
        assert covered >= c / 100 - 3 * se, (dist, p, c, covered)
        assert abs(covered - achieved) <= 4 * se, (dist, p, c, covered, achieved)


def test_variability_joint_coverage_by_simulation():
    """Both bounds hold together in >= 2C - 1 of 10,000 series; = C_l + C_u - 1 at p = 50."""
    rng = np.random.default_rng(2021)
    reps = 10_000
    for p, c, n in [(25, 75, 10), (25, 90, 20), (50, 90, 15), (10, 95, 60)]:
        x = rng.lognormal(size=(reps, n))
        v = variability(x[0], p, c)
        s = np.sort(x, axis=1)
        lo, hi = s[:, v.rank_lower - 1], s[:, v.rank_upper - 1]
        qlo, qhi = stats.lognorm.ppf([v.percentile_low / 100, v.percentile_high / 100], 1.0)
        both = np.mean((lo <= qlo) & (hi >= qhi))
        se = math.sqrt(0.25 / reps)
        assert both >= v.joint_confidence / 100 - 3 * se
        assert v.joint_confidence >= 2 * c - 100 - 1e-9
        if p == 50:
            assert abs(both - v.joint_confidence / 100) <= 4 * se


def test_kpi_with_excluded_extremes():
    x = np.arange(1.0, 91.0)
    k = kpi(x, 95, 99, "upper", exclude=0)
    assert k.rank == 90 and k.min_n == 90
    more = np.arange(1.0, 131.0)
    for n in range(93, 131):
        robust = kpi(more[:n], 95, 95, "upper", exclude=1)
        assert robust.min_n == sizing(95, 95, 1) == 93 and robust.rank <= n - 1
    assert math.isnan(kpi(x[:60], 95, 95, "upper", exclude=1).value)
    low = kpi(more, 5, 95, "lower", exclude=2)
    assert low.min_n == sizing(5, 95, 2) and low.rank >= 3


@pytest.mark.parametrize("n", [1, 2, 5, 15, 16, 17, 37, 100, 1000, 20000])
def test_the_numpy_binomial_cdf_matches_scipy(n):
    """The order-statistic ranks rest on a pure-numpy binomial CDF (no scipy at run time)."""
    from scipy.special import bdtr

    from benchlang.stats._orderstat import _cdf_table

    k = np.arange(n + 1)
    tolerance = 1e-13 if n <= 100 else 5e-11
    ps = np.array([0.0, 1e-6, 0.01, 0.25, 0.5, 0.9, 0.99, 1.0])
    expected = bdtr(k[None, :], n, ps[:, None])
    assert np.max(np.abs(_cdf_table(n, ps) - expected)) <= tolerance


def test_the_numpy_ranks_and_chi_square_tail_match_scipy():
    """The independence test runs without scipy.stats (a run's closing report stays fast)."""
    from benchlang.stats._special import chi2_sf, rankdata

    rng = np.random.default_rng(1)
    ties = rng.integers(0, 5, (4, 30)).astype(float)
    assert np.array_equal(rankdata(ties, axis=1), stats.rankdata(ties, axis=1))
    values = rng.normal(size=50)
    assert np.array_equal(rankdata(values), stats.rankdata(values))
    x = np.linspace(0.0, 80.0, 400)
    for df in (1, 2, 3, 4, 5, 10, 11, 40, 41):
        assert np.max(np.abs(chi2_sf(x, df) - stats.chi2.sf(x, df))) < 1e-13, df
