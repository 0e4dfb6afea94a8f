"""Stopping rules: fixed, KPI width (TriScale §7), adaptive (Mittal et al., PMBS '23)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from benchlang.stats.kpi import kpi
from benchlang.stats.mixtures import fit_mixtures, initial_mixtures
from benchlang.stats.sizing import sizing
from benchlang.stats.stopping import (
    AdaptiveStop,
    FixedStop,
    KpiWidthStop,
)


def replay(rule, x):
    """First stopping decision when the samples arrive one at a time."""
    state = None
    for n in range(1, x.size + 1):
        decision, state = rule.step(x[:n], state)
        if decision.stopped:
            return n, decision
    return x.size, decision


def test_fixed_stop_stops_exactly_at_n():
    rule = FixedStop(30)
    x = np.arange(40, dtype=float)
    assert replay(rule, x)[0] == 30
    assert rule.decide(x[:29]).action == "continue"
    with pytest.raises(ValueError):
        FixedStop(0)


def test_kpi_width_never_stops_below_the_minimal_n():
    # TriScale Table 2: the p95 upper bound at 95% confidence needs N >= 59.
    rule = KpiWidthStop(percentile=95, confidence=95, width=10.0)
    assert rule.min_n == sizing(95, 95) == 59
    x = np.full(80, 5.0)
    n, decision = replay(rule, x)
    assert n == 59 and decision.action == "stop" and decision.rule == "kpi-width"


def test_kpi_width_compares_the_kpi_with_the_median():
    rng = np.random.default_rng(1)
    x = rng.normal(100.0, 1.0, 300)
    rule = KpiWidthStop(percentile=50, confidence=95, width=0.003)
    n, decision = replay(rule, x)
    k = kpi(x[:n], 50, 95, "upper").value
    assert abs(k - np.median(x[:n])) <= 0.003 * abs(np.median(x[:n]))
    before = kpi(x[: n - 1], 50, 95, "upper").value
    assert abs(before - np.median(x[: n - 1])) > 0.003 * abs(np.median(x[: n - 1]))
    assert decision.action == "stop"


def test_kpi_width_absolute_and_max_warning():
    x = np.random.default_rng(2).exponential(1.0, 100)
    tight = KpiWidthStop(percentile=99, confidence=95, width=1e-9, relative=False, max_n=299)
    assert tight.decide(x[:50]).action == "continue"
    wide = KpiWidthStop(percentile=90, confidence=95, width=1e-9, relative=False, max_n=60)
    n, decision = replay(wide, x)
    assert n == 60 and decision.action == "stop_warn" and "max" in decision.reason


def test_tolerance_derivation_and_validation():
    rule = AdaptiveStop()
    assert rule.tol == pytest.approx(20 / (2 * 100))
    assert AdaptiveStop(ks=0.05).tol == pytest.approx(20 / (2 * 400))
    assert AdaptiveStop(tolerance=0.3).tol == 0.3
    for bad in ({"ks": 0.0}, {"min_n": 2}, {"min_n": 50, "max_n": 40}, {"window": 0}):
        with pytest.raises(ValueError):
            AdaptiveStop(**bad)


def test_constant_stops_at_min_n():
    x = 100.0 + np.random.default_rng(3).normal(0.0, 0.5, 50)
    n, decision = replay(AdaptiveStop(), x)
    assert (n, decision.action, decision.detected_class) == (10, "stop", "constant")


def test_monotonic_warns_at_min_n():
    n, decision = replay(AdaptiveStop(), np.linspace(1.0, 3.0, 100))
    assert (n, decision.action, decision.detected_class) == (10, "stop_warn", "monotonic")


def test_drift_warns_and_an_oscillation_does_not():
    rng = np.random.default_rng(4)
    t = np.arange(400)
    _, drift = replay(AdaptiveStop(), 100.0 + 0.5 * t + rng.normal(0, 10, 400))
    assert (drift.action, drift.detected_class) == ("stop_warn", "drifting")
    sine = 100.0 + 20.0 * np.sin(2 * np.pi * t / 25) + rng.normal(0, 5, 400)
    n, decision = replay(AdaptiveStop(), sine)
    assert decision.detected_class == "autocorrelated" and decision.rule == "block-bootstrap"
    assert decision.action == "stop" and n < 400


@pytest.mark.parametrize(
    ("draw", "cls", "rule"),
    [
        (lambda g: g.normal(100.0, 10.0, 400), "gaussian", "standard-error"),
        (lambda g: np.exp(g.normal(0.0, 1.0, 400)), "lognormal", "hdi"),
        (
            lambda g: np.where(g.random(400) < 0.5, g.normal(10, 1, 400), g.normal(30, 1, 400)),
            "multimodal",
            "mixture-likelihood",
        ),
    ],
)
def test_classes_and_their_rules(draw, cls, rule):
    x = draw(np.random.default_rng(5))
    n, decision = replay(AdaptiveStop(), x)
    assert decision.action == "stop" and decision.detected_class == cls and decision.rule == rule
    assert 30 <= n < 400


def test_uniform_warns():
    x = np.random.default_rng(18).uniform(50.0, 150.0, 400)
    rule = AdaptiveStop(max_components=1)
    n, decision = replay(rule, x)
    assert (decision.action, decision.detected_class) == ("stop_warn", "uniform")
    assert n >= rule.min_n + rule.window  # seen at window + 1 prefixes before it warns


def test_heavy_tail_runs_to_max_with_a_warning():
    x = np.random.default_rng(6).standard_cauchy(120) ** 3
    rule = AdaptiveStop(max_n=60, max_components=1)
    n, decision = replay(rule, x)
    assert n == 60 and decision.action == "stop_warn" and decision.rule == "max"


def test_fresh_decide_matches_incremental_steps():
    x = np.random.default_rng(7).normal(50.0, 5.0, 200)
    rule = AdaptiveStop()
    n, decision = replay(rule, x)
    assert rule.decide(x[:n]) == decision
    assert rule.decide(x[: n - 1]).action == "continue"
    # a state built on another series is discarded, not reused
    _, state = rule.step(x[:n])
    other = x[::-1].copy()
    assert rule.step(other[:n], state)[0] == rule.decide(other[:n])


def test_mixture_em_recovers_a_two_component_mixture():
    g = np.random.default_rng(8)
    n = 2000
    x = np.where(g.random(n) < 0.3, g.normal(-2.0, 0.5, n), g.normal(1.0, 1.0, n))
    fit, lse = fit_mixtures(x, initial_mixtures(x, 6), max_iter=500, tol=1e-7)
    m = 1  # K = 2, per-component variances
    assert fit.sizes[m] == 2 and not fit.tied[m]
    order = np.argsort(fit.means[1:3])
    assert fit.means[1:3][order] == pytest.approx([-2.0, 1.0], abs=0.1)
    assert fit.weights[1:3][order] == pytest.approx([0.3, 0.7], abs=0.03)
    assert np.sqrt(fit.variances[1:3][order]) == pytest.approx([0.5, 1.0], abs=0.08)
    # the per-sample log-likelihood is that of the fitted mixture, and K = 1 is the Gaussian MLE
    direct = np.log(
        (
            fit.weights[1:3, None]
            * stats.norm.pdf(x, fit.means[1:3, None], np.sqrt(fit.variances[1:3, None]))
        ).sum(0)
    )
    assert lse[m] == pytest.approx(direct, rel=1e-9, abs=1e-9)
    assert lse[0].sum() == pytest.approx(stats.norm.logpdf(x, x.mean(), x.std()).sum(), rel=1e-6)
    bic = -2 * lse.sum(axis=1) + fit.n_parameters() * math.log(n)
    assert fit.sizes[np.argmin(bic)] == 2
    # tied models share one variance across components
    tied = np.flatnonzero(fit.tied)
    for model in tied:
        start = fit.starts[model]
        assert np.ptp(fit.variances[start : start + fit.sizes[model]]) == pytest.approx(
            0.0, abs=1e-12
        )


def test_bic_prefers_one_component_for_gaussian_data():
    x = np.random.default_rng(9).normal(0.0, 1.0, 400)
    fit, lse = fit_mixtures(x, initial_mixtures(x, 6))
    bic = -2 * lse.sum(axis=1) + fit.n_parameters() * math.log(x.size)
    assert fit.sizes[np.argmin(bic)] == 1


def test_non_finite_samples_are_rejected():
    with pytest.raises(ValueError, match="finite"):
        AdaptiveStop().decide(np.array([1.0, np.nan, 2.0]))
