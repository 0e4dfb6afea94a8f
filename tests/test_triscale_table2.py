"""TriScale's Table 2 (Jacob et al., JSys 1(1) 2021): the minimal number of runs for a KPI and
of series for a variability score, for every percentile row and confidence column.

The table is reconstructed from its rule, as TriScale's ``min_number_samples`` computes it:
one-sided N = ceil(log(1 - C) / log(1 - p)) with p the smaller of p, 1 - p (Eq. 4), and for
the median's variability score the two-sided N = ceil(1 - log(1 - C) / log 2). Each cell is
checked against both the closed form and the binomial definition, and the values the paper
prints are pinned."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlang.stats.sizing import binom_cdf, sizing
from benchlang.stats.variability import variability
from benchlang.stats.variability_sizing import median_two_sided_coverage, variability_sizing

CONFIDENCES = (75, 90, 95, 99)
# percentile row -> (KPI runs, variability series) per confidence column 75, 90, 95, 99
TABLE2 = {
    50: ((2, 4, 5, 7), (3, 5, 6, 8)),
    25: ((5, 9, 11, 17), (5, 9, 11, 17)),
    10: ((14, 22, 29, 44), (14, 22, 29, 44)),
    5: ((28, 45, 59, 90), (28, 45, 59, 90)),
    1: ((138, 230, 299, 459), (138, 230, 299, 459)),
}
PUBLISHED = [
    # (what, percentile, confidence, N): values printed in the paper or in the issue
    ("series", 50, 75, 3),
    ("series", 50, 90, 5),
    ("runs", 50, 95, 5),
    ("runs", 95, 95, 59),
    ("runs", 95, 99, 90),
    ("runs", 99, 95, 299),
    ("runs", 90, 95, 29),
]


@pytest.mark.parametrize("p", sorted(TABLE2))
def test_every_row_of_table_2(p):
    runs, series = TABLE2[p]
    for c, n_kpi, n_var in zip(CONFIDENCES, runs, series, strict=True):
        q = 1 - min(p, 100 - p) / 100
        one_sided = math.ceil(math.log(1 - c / 100) / math.log(q))
        two_sided = math.ceil(1 - math.log(1 - c / 100) / math.log(2))
        assert sizing(p, c) == n_kpi == one_sided
        assert sizing(100 - p, c) == n_kpi  # the mirror percentile needs the same
        assert variability_sizing(p, c) == n_var == (two_sided if p == 50 else one_sided)
        assert variability_sizing(100 - p, c) == n_var
        # binomial definitions: enough with N, not with N - 1
        if p == 50:
            assert median_two_sided_coverage(n_var) >= c / 100
            assert median_two_sided_coverage(n_var - 1) < c / 100
        else:
            assert 1 - q**n_kpi >= c / 100 > 1 - q ** (n_kpi - 1)


@pytest.mark.parametrize(("what", "p", "c", "n"), PUBLISHED)
def test_published_values(what, p, c, n):
    assert (variability_sizing(p, c) if what == "series" else sizing(p, c)) == n


def test_median_with_excluded_series_matches_triscales_search():
    """TriScale: N from max(N_double, 2(r + 1)) up, until 1 - 2 P(Bin(N, 1/2) <= r) >= C."""
    for c in CONFIDENCES:
        for r in range(4):
            n = max(math.ceil(1 - math.log(1 - c / 100) / math.log(2)), 2 * (r + 1))
            while 1 - 2 * binom_cdf(r, n, 0.5) < c / 100:
                n += 1
            assert variability_sizing(50, c, r) == n


@pytest.mark.parametrize("c", CONFIDENCES)
def test_median_score_at_the_planned_size_states_the_asked_confidence(c):
    """With as many series as planned the score exists and its stated (exact, two-sided)
    confidence is at least C: no more '50% joint' at 75% asked."""
    n = variability_sizing(50, c)
    v = variability(np.arange(1.0, n + 1), 50, c)
    assert v.enough and v.joint_exact and v.min_n == n
    assert v.joint_confidence >= c
    assert v.confidence_lower == v.confidence_upper == pytest.approx((100 + v.joint_confidence) / 2)
    assert not variability(np.arange(1.0, n), 50, c).enough


def test_median_interval_covers_the_median_at_least_c_by_simulation():
    """10,000 seeded log-normal data sets per confidence, N = planned series."""
    rng = np.random.default_rng(2021)
    for c in CONFIDENCES:
        n = variability_sizing(50, c)
        v = variability(np.arange(1.0, n + 1), 50, c)
        x = np.sort(rng.lognormal(0.0, 1.0, (10_000, n)), axis=1)
        covered = (x[:, v.rank_lower - 1] <= 1.0) & (x[:, v.rank_upper - 1] >= 1.0)
        se = math.sqrt(v.joint_confidence / 100 * (1 - v.joint_confidence / 100) / 10_000)
        assert covered.mean() >= c / 100 - 3 * se
        assert abs(covered.mean() - v.joint_confidence / 100) < 4 * se + 1e-9


def test_other_percentiles_keep_two_one_sided_bounds_with_the_joint_level_stated():
    v = variability(np.arange(1.0, 12.0), 25, 95)
    assert v.min_n == 11 and not v.joint_exact
    assert v.confidence_lower >= 95 and v.confidence_upper >= 95
    assert v.joint_confidence == pytest.approx(v.confidence_lower + v.confidence_upper - 100)
