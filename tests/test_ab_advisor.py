"""Design advisor: layout and H, R, T under the cost model of §3.1.2 (Bakshy & Frachtenberg, WWW 2015)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from benchlang.design.layouts import LAYOUTS, hosts_per_version, layout_schedule
from benchlang.stats.ab.advisor import CostModel, advise, advise_from_pilot, conservative_components
from benchlang.stats.ab.designs import VarianceComponents, layout_se
from benchlang.stats.ab.mixed import fit_mixed_moments
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes

ENDPOINT1 = VarianceComponents.from_sd(
    request=1.05, host=0.12, request_batch=0.10, host_batch=0.075, residual=0.10
)
COST = CostModel(batch=30.0, request=1.0, trial=0.5, warmup=2)


def brute_force(kind, comps, cost, budget=None, target=None, max_hosts=8, max_t=4, max_r=400):
    best = None
    for H, T in itertools.product(range(2, max_hosts + 1), range(1, max_t + 1)):
        if kind in ("unbalanced", "request_balanced") and H % 2:
            continue
        k = hosts_per_version(kind, H)
        for R in range(k, max_r + 1, k):
            c, se = cost.cost(kind, H, R, T), layout_se(kind, H, R, T, comps)
            if budget is not None and c <= budget:
                key = (se, c)
            elif target is not None and se <= target:
                key = (c, se)
            else:
                continue
            best = key if best is None or key < best else best
    return best


@pytest.mark.parametrize("kind", LAYOUTS)
def test_budget_optimum_matches_brute_force(kind):
    advice = advise(ENDPOINT1, COST, budget=600.0, max_hosts=8, max_repetitions=4, layouts=(kind,))
    best = advice.best
    assert best.cost <= 600.0
    assert (best.se, best.cost) == pytest.approx(brute_force(kind, ENDPOINT1, COST, budget=600.0))


@pytest.mark.parametrize("kind", LAYOUTS)
def test_target_optimum_matches_brute_force(kind):
    advice = advise(
        ENDPOINT1,
        COST,
        target_se=0.15,
        max_hosts=8,
        max_repetitions=4,
        layouts=(kind,),
        request_pool=800,
    )
    best = advice.best
    assert best.se <= 0.15
    assert (best.cost, best.se) == pytest.approx(brute_force(kind, ENDPOINT1, COST, target=0.15))


def test_fully_balanced_wins_for_the_paper_components_and_ranking_is_sorted():
    advice = advise(ENDPOINT1, COST, budget=5000.0, max_hosts=32)
    assert advice.best.layout == "fully_balanced"
    ses = [c.se for c in advice.ranking]
    assert ses == sorted(ses)
    target = advise(ENDPOINT1, COST, target_se=0.03, max_hosts=32)
    assert target.best.layout == "fully_balanced"
    assert [c.cost for c in target.ranking] == sorted(c.cost for c in target.ranking)


def test_repetitions_pay_off_only_when_requests_are_expensive():
    # residual-dominated components with a costly request: repeat; cheap requests: no repetition
    comps = VarianceComponents(request_batch=0.01, residual=1.0)
    costly = advise(
        comps,
        CostModel(request=20.0, trial=0.1),
        budget=4000.0,
        max_hosts=4,
        layouts=("fully_balanced",),
    )
    cheap = advise(
        comps,
        CostModel(request=0.0, trial=1.0),
        budget=4000.0,
        max_hosts=4,
        layouts=("fully_balanced",),
    )
    assert costly.best.repetitions > 1
    assert cheap.best.repetitions == 1


def test_infeasible_and_bad_arguments():
    advice = advise(ENDPOINT1, COST, target_se=0.1, max_hosts=4, request_pool=100)
    assert "unbalanced" in advice.infeasible
    with pytest.raises(ValueError, match="exactly one"):
        advise(ENDPOINT1, COST)
    with pytest.raises(ValueError, match="no layout"):
        advise(ENDPOINT1, COST, budget=1.0)


def test_pilot_with_inseparable_components_plans_conservatively():
    d = ABDesign.from_schedule(layout_schedule("unbalanced", 8, 128, 2, seed=0))
    y = simulate_outcomes(d, ENDPOINT1, 1, np.random.default_rng(0))[0]
    fit, advice = advise_from_pilot(y, d, COST, budget=3000.0, max_hosts=16)
    assert fit.method == "moments"
    comps = conservative_components(fit)
    assert comps.request == 0.0 and comps.host == 0.0
    assert comps.request_batch == pytest.approx(fit.components["request+request_batch"])
    fb = next(c for c in advice.ranking if c.layout == "fully_balanced")
    assert fb.se == pytest.approx(
        layout_se("fully_balanced", fb.hosts, fb.requests, fb.repetitions, comps)
    )
    # the same pilot sums with the inseparable ones put on the terms FB cancels: a smaller SE
    optimistic = VarianceComponents(
        request=comps.request_batch, host=comps.host_batch, residual=comps.residual
    )
    assert fb.se >= layout_se("fully_balanced", fb.hosts, fb.requests, fb.repetitions, optimistic)
    full = fit_mixed_moments(y, d, se_replicates=0)
    assert math.isclose(sum(full.components.values()), sum(fit.components.values()))
