"""Analytic SEs of the four layouts against the paper's Table 3 and against simulation.

Bakshy & Frachtenberg (WWW 2015), Table 3, "SE" column for endpoint 1 with H = 16 hosts and
R = 512 requests per version: UB 0.10, RB 0.07, HB 0.07, FB 0.03. Table 1's standard deviations
were not retrievable here, so ENDPOINT1 is derived from that column (docs/ab-designs.md): the
four SEs fix four combinations of the variance components (request; host + host x batch/2;
host x batch; request x batch + residual), and any split of the last one gives the same SEs.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchlang.design.layouts import LAYOUTS, layout_schedule
from benchlang.stats.ab.designs import (
    VarianceComponents,
    contrast_variance,
    design_effect,
    icc,
    layout_se,
    layout_variance,
)
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes

ENDPOINT1 = VarianceComponents.from_sd(
    request=1.05, host=0.12, request_batch=0.10, host_batch=0.075, residual=0.10
)
TABLE3_SE = {
    "unbalanced": 0.10,
    "request_balanced": 0.07,
    "host_balanced": 0.07,
    "fully_balanced": 0.03,
}


@pytest.mark.parametrize("kind", LAYOUTS)
def test_analytic_se_reproduces_table3(kind):
    se = layout_se(kind, 16, 512, 1, ENDPOINT1)
    assert round(se, 2) == TABLE3_SE[kind]


@pytest.mark.parametrize("kind", LAYOUTS)
@pytest.mark.parametrize(("H", "R", "T"), [(16, 512, 1), (6, 50, 3), (4, 9, 2)])
def test_layout_formula_equals_exact_contrast_variance(kind, H, R, T):
    d = ABDesign.from_schedule(layout_schedule(kind, H, R, T, seed=1))
    exact = contrast_variance(d.version, d.factors(), ENDPOINT1)
    assert exact == pytest.approx(layout_variance(kind, H, R, T, ENDPOINT1), rel=1e-12)


@pytest.mark.parametrize("kind", LAYOUTS)
def test_simulated_sd_of_estimate_within_3_percent_of_analytic(kind):
    d = ABDesign.from_schedule(layout_schedule(kind, 16, 512, 1, seed=0))
    rng = np.random.default_rng(2015)
    y = simulate_outcomes(d, ENDPOINT1, 10_000, rng)
    delta = y[:, d.version == 1].mean(axis=1) - y[:, d.version == 0].mean(axis=1)
    assert abs(delta.mean()) < 4 * layout_se(kind, 16, 512, 1, ENDPOINT1) / 100
    assert delta.std(ddof=1) == pytest.approx(layout_se(kind, 16, 512, 1, ENDPOINT1), rel=0.03)


def test_simulated_sd_with_repetitions_and_effect():
    d = ABDesign.from_schedule(layout_schedule("fully_balanced", 8, 64, 4, seed=0))
    y = simulate_outcomes(d, ENDPOINT1, 4000, np.random.default_rng(3), effect=0.2)
    delta = y[:, d.version == 1].mean(axis=1) - y[:, d.version == 0].mean(axis=1)
    se = layout_se("fully_balanced", 8, 64, 4, ENDPOINT1)
    assert delta.mean() == pytest.approx(0.2, abs=4 * se / np.sqrt(4000))
    assert delta.std(ddof=1) == pytest.approx(se, rel=0.05)


def test_balanced_layouts_cancel_the_shared_effects():
    only_request = VarianceComponents(request=1.0)
    only_host = VarianceComponents(host=1.0)
    assert layout_variance("request_balanced", 8, 64, 1, only_request) == 0
    assert layout_variance("fully_balanced", 8, 64, 1, only_request) == 0
    assert layout_variance("host_balanced", 8, 64, 1, only_host) == 0
    assert layout_variance("fully_balanced", 8, 64, 1, only_host) == 0
    # batch effects never cancel: the versions run in separate service instances
    assert layout_variance("fully_balanced", 8, 64, 1, VarianceComponents(host_batch=1.0)) == 2 / 8


def test_icc_and_design_effect():
    c = VarianceComponents(request=0.6, request_batch=0.2, residual=0.2, host=5.0)
    assert icc(c) == pytest.approx(0.8)
    assert design_effect(c, 1) == 1.0
    assert design_effect(c, 6) == pytest.approx(1 + 5 * 0.8)
    # the request part of Var(mean) of R requests x T repetitions is total * deff / (R T)
    R, T = 64, 6
    direct = (c.request + c.request_batch) / R + c.residual / (R * T)
    assert direct == pytest.approx(1.0 * design_effect(c, T) / (R * T))


def test_components_validate():
    with pytest.raises(ValueError, match="unknown"):
        VarianceComponents.from_sd(user=1.0)
    with pytest.raises(ValueError, match=">= 0"):
        VarianceComponents(request=-1.0)
    assert VarianceComponents.from_sd(request=2.0).request == 4.0
