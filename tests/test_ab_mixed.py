"""Crossed random effects (Bakshy & Frachtenberg, WWW 2015, §3, Eq. 3–4): identifiability, REML, moments."""

from __future__ import annotations

import numpy as np
import pytest

from benchlang.design.layouts import layout_schedule
from benchlang.stats.ab.designs import VarianceComponents, layout_se
from benchlang.stats.ab.mixed import (
    fit_mixed,
    fit_mixed_moments,
    fit_mixed_reml,
    identifiability,
    is_balanced,
)
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes

TRUE = VarianceComponents.from_sd(
    request=1.0, host=0.4, request_batch=0.25, host_batch=0.15, residual=0.3
)


def design(kind, H=8, R=64, T=3, seed=0):
    return ABDesign.from_schedule(layout_schedule(kind, H, R, T, seed=seed))


@pytest.mark.parametrize(
    ("kind", "T", "not_identifiable"),
    [
        ("unbalanced", 1, {"request", "request_batch", "residual", "host", "host_batch"}),
        ("unbalanced", 3, {"request", "request_batch", "host", "host_batch"}),
        ("request_balanced", 1, {"host", "host_batch", "request_batch", "residual"}),
        ("request_balanced", 3, {"host", "host_batch"}),
        ("host_balanced", 1, {"request", "request_batch", "residual"}),
        ("host_balanced", 3, {"request", "request_batch"}),
        ("fully_balanced", 1, {"request_batch", "residual"}),
        ("fully_balanced", 3, set()),
    ],
)
def test_identifiability_follows_the_design(kind, T, not_identifiable):
    ident = identifiability(design(kind, T=T))
    assert set(ident.not_identifiable) == not_identifiable
    assert set(ident.separable) | not_identifiable == {
        "request",
        "host",
        "request_batch",
        "host_batch",
        "residual",
    }


def test_single_host_per_version_is_absorbed_by_the_version_effect():
    ident = identifiability(design("unbalanced", H=2, R=8, T=2))
    assert set(ident.absorbed) == {"host", "host_batch"}


def test_fit_reports_sums_of_inseparable_components_under_a_combined_name():
    d = design("host_balanced", T=1)
    y = simulate_outcomes(d, TRUE, 1, np.random.default_rng(0))[0]
    fit = fit_mixed_moments(y, d, se_replicates=0)
    assert set(fit.components) == {"request+request_batch+residual", "host", "host_batch"}
    assert fit.icc is None and fit.design_effect is None
    assert "request" in fit.not_identifiable


def test_moments_are_unbiased_and_their_se_matches_their_spread():
    d = design("fully_balanced", H=8, R=64, T=3)
    truth = np.array([TRUE.request, TRUE.host, TRUE.request_batch, TRUE.host_batch, TRUE.residual])
    ests = []
    for seed in range(60):
        y = simulate_outcomes(d, TRUE, 1, np.random.default_rng(100 + seed))[0]
        fit = fit_mixed_moments(y, d, se_replicates=0)
        ests.append(
            [
                fit.raw_components[n]
                for n in ("request", "host", "request_batch", "host_batch", "residual")
            ]
        )
    ests = np.array(ests)
    spread = ests.std(axis=0, ddof=1)
    assert np.all(np.abs(ests.mean(axis=0) - truth) < 4 * spread / np.sqrt(60))
    one = fit_mixed_moments(
        simulate_outcomes(d, TRUE, 1, np.random.default_rng(7))[0], d, se_replicates=400, seed=1
    )
    ses = np.array(
        [
            one.component_se[n]
            for n in ("request", "host", "request_batch", "host_batch", "residual")
        ]
    )
    assert np.all(np.abs(ses / spread - 1) < 0.45)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "T", "se_ratio"),
    [
        ("fully_balanced", 3, (0.9, 1.1)),
        ("request_balanced", 2, (0.35, 1.25)),
        ("host_balanced", 2, (0.9, 1.1)),
    ],
)
def test_moments_agree_with_reml_within_their_se(kind, T, se_ratio):
    """Over six datasets (those where REML converges): every component within 1.5 moment SEs of REML and at least 90% within
    one; the effects coincide. The request-balanced effect SE rests on 4 hosts per version, whose
    variance both methods estimate poorly (REML clips it at 0), so its SEs agree only loosely."""
    d = design(kind, H=8, R=48, T=T, seed=2)
    gaps, ratios = [], []
    for data_seed in range(40, 46):
        y = simulate_outcomes(d, TRUE, 1, np.random.default_rng(data_seed), effect=0.1)[0]
        mom = fit_mixed_moments(y, d, se_replicates=300, seed=3)
        reml = fit_mixed_reml(y, d)
        if not reml.converged:
            continue
        assert set(mom.components) == set(reml.components)
        gaps += [
            abs(v - reml.components[n]) / mom.component_se[n] for n, v in mom.components.items()
        ]
        assert mom.effect == pytest.approx(reml.effect, abs=0.25 * mom.effect_se)
        ratios.append(mom.effect_se / reml.effect_se)
    assert len(ratios) >= 5, "REML should converge on most datasets"
    gaps = np.array(gaps)
    assert gaps.max() <= 1.5 and np.mean(gaps <= 1.0) >= 0.9
    assert se_ratio[0] < min(ratios) and max(ratios) < se_ratio[1]


def test_moments_effect_se_is_the_analytic_layout_se_at_the_truth():
    d = design("fully_balanced", H=8, R=64, T=3)
    fits = [
        fit_mixed_moments(
            simulate_outcomes(d, TRUE, 1, np.random.default_rng(s))[0], d, se_replicates=0
        )
        for s in range(20)
    ]
    assert all(f.repetitions == 3 for f in fits)
    mean_se = np.mean([f.effect_se for f in fits])
    assert mean_se == pytest.approx(layout_se("fully_balanced", 8, 64, 3, TRUE), rel=0.1)
    icc = np.mean([f.icc for f in fits])
    assert icc == pytest.approx(
        (TRUE.request + TRUE.request_batch) / (TRUE.request + TRUE.request_batch + TRUE.residual),
        rel=0.1,
    )
    assert all(f.design_effect == pytest.approx(1 + 2 * f.icc) for f in fits)


def test_auto_picks_moments_for_balanced_designs():
    d = design("fully_balanced", H=4, R=16, T=2)
    assert is_balanced(d)
    y = simulate_outcomes(d, TRUE, 1, np.random.default_rng(0))[0]
    assert fit_mixed(y, d, se_replicates=0).method == "moments"
    keep = np.ones(d.size, dtype=bool)
    keep[:3] = False
    unbalanced = ABDesign(d.version[keep], d.request[keep], d.host[keep], d.batch[keep])
    assert not is_balanced(unbalanced)
    assert fit_mixed(y[keep], unbalanced).method == "reml"


def test_no_estimable_random_term_falls_back_to_least_squares():
    v = np.repeat([0, 1], 20)
    d = ABDesign(v, np.arange(40), np.zeros(40, dtype=int), np.zeros(40, dtype=int))
    y = np.random.default_rng(0).normal(size=40) + 0.5 * v
    reml, mom = fit_mixed_reml(y, d), fit_mixed_moments(y, d, se_replicates=0)
    assert set(identifiability(d).absorbed) == {"host", "host_batch"}
    assert list(reml.components) == ["request+request_batch+residual"]
    assert reml.effect == pytest.approx(y[v == 1].mean() - y[v == 0].mean())
    assert reml.effect_se == pytest.approx(mom.effect_se)
    assert reml.components == pytest.approx(mom.components)


def test_variance_components_are_never_negative_and_clipping_is_said():
    """A host x batch variance of 0: the unbiased moment estimate is negative in about half of
    the data sets; the reported components are clipped at 0 and the clipped names listed."""
    import io

    from benchlang.report.compare_text import render_comparisons

    zero = VarianceComponents.from_sd(
        request=1.0, host=0.3, request_batch=0.2, host_batch=0.0, residual=0.3
    )
    d = design("fully_balanced", H=8, R=32, T=2)
    negative = 0
    for seed in range(30):
        y = simulate_outcomes(d, zero, 1, np.random.default_rng(500 + seed))[0]
        fit = fit_mixed_moments(y, d, se_replicates=0)
        assert min(fit.components.values()) >= 0.0
        assert set(fit.clipped) == {k for k, v in fit.raw_components.items() if v < 0}
        for k in fit.clipped:
            assert fit.components[k] == 0.0 and fit.raw_components[k] < 0
        negative += bool(fit.clipped)
        if fit.clipped and negative == 1:
            from types import SimpleNamespace

            buf = io.StringIO()
            fake = SimpleNamespace(
                comparison=SimpleNamespace(metric="t", by="version", method="mixed_effects"),
                mixed=fit,
                problem=None,
                bootstrap=None,
                levels=None,
                notes=(),
            )
            render_comparisons([fake], buf)
            text = buf.getvalue()
            table = text.split("--------\n", 1)[1].split("clipped at 0")[0]
            assert all(float(line.split()[-1]) >= 0 for line in table.splitlines())
            assert "clipped at 0" in text
    assert negative >= 5  # the case is exercised
