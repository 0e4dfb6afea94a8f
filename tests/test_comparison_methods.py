"""The comparison built-ins against published numbers, brute force, scipy, and seeded
simulations small enough for the suite (the 2,000-data-set runs are in
benchmarks/sim_comparison_coverage.py; docs/statistics-methods.md lists their results)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from benchlang.stats.contract import ComparisonSample
from benchlang.stats.methods.rank_impl import hodges_lehmann, kth_difference, u_null_cdf
from benchlang.stats.registry import statistics_methods


def sample(a, b, clusters: int = 1, seed: int = 0, better: str = "lower") -> ComparisonSample:
    a, b = np.asarray(a, float), np.asarray(b, float)
    y = np.concatenate([a, b])
    zeros = np.zeros(y.size, dtype=np.int64)
    return ComparisonSample(
        y=y,
        level=np.repeat([0, 1], [a.size, b.size]),
        names=("a", "b"),
        reference=0,
        request=zeros,
        host=zeros,
        series=np.concatenate(
            [np.arange(a.size) % clusters, clusters + np.arange(b.size) % clusters]
        ),
        round=np.arange(y.size),
        batch=zeros,
        seed=seed,
        better=better,
    )


def run(name: str, s: ComparisonSample, **settings):
    method = statistics_methods()[name]
    return method.load()(s, {**method.defaults(), **settings})


@pytest.mark.parametrize(("m", "n"), [(3, 4), (5, 5), (6, 2)])
def test_exact_null_distribution_matches_enumeration(m, n):
    counts = [
        sum(c + 1 for c in comb) - n * (n + 1) // 2
        for comb in itertools.combinations(range(m + n), n)
    ]
    brute = np.array([np.mean(np.array(counts) <= u) for u in range(m * n + 1)])
    assert np.allclose(u_null_cdf(m, n), brute, atol=1e-12)


@pytest.mark.parametrize(("n", "critical"), [(5, 2), (8, 13), (10, 23), (20, 127)])
def test_two_sided_5_percent_critical_values_of_the_published_table(n, critical):
    """Mann-Whitney U critical values, two-sided alpha 0.05, n1 = n2 (Hollander, Wolfe &
    Chicken 2014, Table A.6 via W = U + n(n+1)/2; Siegel & Castellan 1988, Table J)."""
    cdf = u_null_cdf(n, n)
    assert cdf[critical] <= 0.025 < cdf[critical + 1]


def test_order_statistics_of_differences_match_brute_force():
    rng = np.random.default_rng(5)
    for m, n in [(1, 1), (3, 7), (40, 25), (300, 200)]:
        x, y = rng.normal(size=m), rng.normal(size=n).round(1)  # rounding makes ties
        d = np.sort((y[:, None] - x[None, :]).ravel())
        for k in {1, min(2, d.size), max(1, d.size // 3), d.size // 2 + 1, d.size}:
            assert kth_difference(x, y, k) == d[k - 1]
        assert hodges_lehmann(x, y) == pytest.approx(np.median(d))


def test_mann_whitney_p_values_agree_with_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(11)
    for mode in ("exact", "asymptotic"):
        x, y = rng.normal(size=9), rng.normal(size=12) + 0.8
        out = run("mann_whitney", sample(x, y), exact=mode)
        ref = scipy_stats.mannwhitneyu(y, x, method=mode, use_continuity=True).pvalue
        assert out.p_value == pytest.approx(ref, rel=1e-9)
        assert out.scale == "shift" and out.ci_low < out.estimate < out.ci_high


def test_mann_whitney_exact_interval_has_its_achieved_confidence_and_refuses_tiny_samples():
    out = run("mann_whitney", sample([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]))
    # n = m = 5: C = 3, achieved 1 - 2 P(U <= 2) = 1 - 2 * 4/252 = 96.83% (H&W §4.3)
    assert out.achieved_confidence == pytest.approx(100 * (1 - 8 / 252))
    assert (out.ci_low, out.estimate, out.ci_high) == (2.0, 5.0, 8.0) and out.significant
    tiny = run("mann_whitney", sample([1.0, 2.0], [3.0, 4.0]))
    assert tiny.descriptive_only and "too few" in tiny.descriptive_only
    assert statistics_methods()["mann_whitney"].needs({"confidence": 95.0}) == 4


def test_mann_whitney_coverage_by_simulation():
    """400 seeded data sets per distribution: the exact interval covers the true shift at
    least nominally (minus 2.5 binomial SEs for 400 draws)."""
    rng = np.random.default_rng(2024)
    for draw in (rng.normal, rng.exponential, lambda size: rng.standard_t(2, size=size)):
        hits = 0
        for i in range(400):
            out = run("mann_whitney", sample(draw(size=7), draw(size=9) + 1.0, seed=i))
            hits += out.ci_low <= 1.0 <= out.ci_high
        assert hits / 400 >= 0.95 - 2.5 * math.sqrt(0.95 * 0.05 / 400)


def test_median_ratio_recovers_a_known_ratio_with_a_clustered_interval():
    rng = np.random.default_rng(3)
    a = rng.lognormal(0, 0.2, 60)
    out = run("median_ratio", sample(a, 1.5 * rng.lognormal(0, 0.2, 60), clusters=6))
    assert out.scale == "ratio" and out.ci_low < 1.5 < out.ci_high and out.significant
    assert any("series" in n for n in out.notes)
    few = run("median_ratio", sample(a[:6], a[:6] * 2, clusters=2))
    assert few.descriptive_only and math.isnan(few.ci_low) and few.significant is None


def test_median_ratio_coverage_by_simulation():
    rng = np.random.default_rng(8)
    hits = 0
    for i in range(150):
        a = rng.gamma(3.0, size=30) * np.repeat(np.exp(rng.normal(0, 0.05, 6)), 5)
        b = 1.2 * rng.gamma(3.0, size=30) * np.repeat(np.exp(rng.normal(0, 0.05, 6)), 5)
        out = run("median_ratio", sample(a, b, clusters=6, seed=i), replicates=400)
        hits += out.ci_low <= 1.2 <= out.ci_high
    assert hits / 150 >= 0.95 - 2.5 * math.sqrt(0.95 * 0.05 / 150)


def test_equivalence_verdicts_and_type_one_error_at_the_margin():
    rng = np.random.default_rng(4)
    tight = lambda n: 1.0 + 0.01 * rng.standard_normal(n)  # noqa: E731
    same = run("equivalence", sample(tight(40), tight(40), clusters=8), margin=2.0)
    assert same.verdict == "equivalent" and same.confidence == pytest.approx(90.0)
    worse = run("equivalence", sample(tight(40), 1.1 * tight(40), clusters=8), margin=2.0)
    assert worse.verdict == "worse"
    better = run(
        "equivalence", sample(tight(40), 1.1 * tight(40), clusters=8, better="higher"), margin=2.0
    )
    assert better.verdict == "better"
    said_equivalent = 0
    for i in range(150):
        out = run(
            "equivalence",
            sample(tight(40), 1.02 * tight(40), clusters=8, seed=i),
            margin=2.0,
            replicates=400,
        )
        said_equivalent += out.verdict == "equivalent"
    assert said_equivalent / 150 <= 0.05 + 2.5 * math.sqrt(0.05 * 0.95 / 150)
