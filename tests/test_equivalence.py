"""The before/after ratio interval (stats.two_sample) and the TOST / regression verdicts
(stats.equivalence), by simulation on seeded synthetic data: coverage at least nominal, and
the gate's Type I error at the margin at most alpha (binomial Monte Carlo slack)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchlang.stats.equivalence import equivalence, tost_confidence
from benchlang.stats.two_sample import ratio_of_percentiles

DATASETS = 400
SLACK = 3 * math.sqrt(0.05 * 0.95 / DATASETS)  # three binomial standard errors at 5%


def _clustered(rng, ratio: float, series: int, per: int, sigma_series: float, sigma: float):
    """Log-normal values with a series effect: (values, clusters (n, 3): host, series, round)."""
    effect = rng.normal(0.0, sigma_series, series).repeat(per)
    values = ratio * np.exp(effect + rng.normal(0.0, sigma, series * per))
    clusters = np.stack(
        [np.zeros(series * per), np.arange(series).repeat(per), np.tile(np.arange(per), series)],
        axis=1,
    )
    return values, clusters


@pytest.mark.parametrize("shape", ["iid", "clustered"])
def test_the_ratio_interval_covers_at_least_nominally(shape):
    rng = np.random.default_rng(7 if shape == "iid" else 8)
    sigma_series = 0.0 if shape == "iid" else 0.03
    truth = 1.05
    hits = 0
    for _ in range(DATASETS):
        a, ca = _clustered(rng, 1.0, 8, 6, sigma_series, 0.05)
        b, cb = _clustered(rng, truth, 8, 6, sigma_series, 0.05)
        r = ratio_of_percentiles(a, ca, b, cb, confidence=90, replicates=400, seed=1)
        hits += r.lower <= truth <= r.upper
    assert hits / DATASETS >= 0.90 - SLACK, hits


def test_the_gate_claims_a_regression_at_the_margin_at_most_alpha_of_the_time():
    """True ratio exactly 1 + margin: "worse beyond the margin" is a one-sided test at alpha;
    "equivalent" (TOST) must be as rare."""
    rng = np.random.default_rng(11)
    margin, alpha = 0.02, 0.05
    worse = equivalent = 0
    for _ in range(DATASETS):
        a, ca = _clustered(rng, 1.0, 10, 5, 0.0, 0.02)
        b, cb = _clustered(rng, 1.0 + margin, 10, 5, 0.0, 0.02)
        r = ratio_of_percentiles(
            a, ca, b, cb, confidence=tost_confidence(alpha), replicates=400, seed=2
        )
        verdict = equivalence(r.lower, r.upper, margin, alpha=alpha).verdict
        worse += verdict == "worse"
        equivalent += verdict == "equivalent"
    assert worse / DATASETS <= alpha + SLACK
    assert equivalent / DATASETS <= alpha + SLACK


def test_a_clear_regression_is_worse_and_no_change_is_equivalent():
    rng = np.random.default_rng(3)
    a, ca = _clustered(rng, 1.0, 10, 6, 0.0, 0.01)
    b, cb = _clustered(rng, 1.2, 10, 6, 0.0, 0.01)
    same, cs = _clustered(rng, 1.0, 10, 6, 0.0, 0.01)
    slow = ratio_of_percentiles(a, ca, b, cb, confidence=90)
    flat = ratio_of_percentiles(a, ca, same, cs, confidence=90)
    assert equivalence(slow.lower, slow.upper, 0.05).verdict == "worse"
    assert equivalence(slow.lower, slow.upper, 0.05, better="higher").verdict == "better"
    assert equivalence(flat.lower, flat.upper, 0.05).verdict == "equivalent"
    assert slow.ratio == pytest.approx(1.2, rel=0.02)


def test_too_few_units_give_a_ratio_without_an_interval():
    rng = np.random.default_rng(4)
    a, ca = _clustered(rng, 1.0, 3, 10, 0.0, 0.05)
    b, cb = _clustered(rng, 1.1, 3, 10, 0.0, 0.05)
    r = ratio_of_percentiles(a, ca, b, cb)
    assert r.descriptive_only and math.isnan(r.lower) and r.units == (3, 3)
    assert "A has 3 series units: too few" in r.reasons[0]
    assert equivalence(r.lower, r.upper, 0.02).verdict == "inconclusive"


def test_bad_margins_and_alphas_are_refused():
    with pytest.raises(ValueError):
        equivalence(0.9, 1.1, 0.0)
    with pytest.raises(ValueError):
        tost_confidence(0.6)
