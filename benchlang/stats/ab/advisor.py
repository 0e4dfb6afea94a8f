"""Design advisor: choose the layout and H, R, T for an A/B benchmark (after Bakshy & Frachtenberg, WWW 2015, §3.1.2, §4.2.1).

The paper shows how the standard error of each layout depends on H, R, T and the variance
components, and prices an experiment by its batches, requests and repetitions (§3.1.2); it leaves
the optimisation as future work. Here it is concrete:

    cost(layout, H, R, T) = batches * (c_batch + (W + C) * c_trial) + 2R * c_request + 2RT * c_trial

with ``batches = H`` (UB, RB) or ``2H`` (HB, FB): each host batch pays a setup/reset and its
warm-up/cool-down trials; each of the 2R (request, version) runs pays a fixed cost (loading the
request, its first-execution overhead); every measured trial pays the marginal cost.

Two objectives, each solved exactly over the grid of hosts ``H`` and repetitions ``T``:

- ``budget``: the smallest SE whose cost fits the budget (for each H, T the largest affordable R);
- ``target_se``: the cheapest plan whose SE reaches the target (for each H, T the smallest R:
  ``Var = B(H) + A(T)/R`` when hosts get equal shares, so R has a closed form).

R is kept a multiple of the hosts per version so every host gets the same number of requests.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.design.layouts import LAYOUTS, hosts_per_version, layout_counts
from benchlang.stats.ab.designs import VarianceComponents, layout_variance
from benchlang.stats.ab.mixed import MixedEffectsResult, fit_mixed
from benchlang.stats.ab.simulate import ABDesign


@attrs.frozen
class CostModel:
    """Prices of §3.1.2, in any unit (machine seconds, dollars)."""

    batch: float = 0.0
    request: float = 0.0
    trial: float = 1.0
    warmup: int = 0
    cooldown: int = 0

    def cost(self, kind: str, H: int, R: int, T: int) -> float:
        counts = layout_counts(kind, H, R, T)
        per_batch = self.batch + (self.warmup + self.cooldown) * self.trial
        return counts["batches"] * per_batch + 2 * R * self.request + 2 * R * T * self.trial


@attrs.frozen
class PlanChoice:
    """One candidate plan: layout, sizes, its analytic SE and its cost."""

    layout: str
    hosts: int
    requests: int
    repetitions: int
    se: float
    cost: float


@attrs.frozen
class Advice:
    """The best plan of every feasible layout, best first; ``infeasible`` lists the others."""

    objective: str
    ranking: tuple[PlanChoice, ...]
    infeasible: tuple[str, ...]

    @property
    def best(self) -> PlanChoice:
        return self.ranking[0]


def _max_requests(kind: str, pool: int | None) -> float:
    if pool is None:
        return math.inf
    return pool // 2 if kind in ("unbalanced", "host_balanced") else pool


def _best_for_layout(
    kind: str,
    components: VarianceComponents,
    cost: CostModel,
    budget: float | None,
    target_se: float | None,
    hosts: list[int],
    max_repetitions: int,
    pool: int | None,
) -> PlanChoice | None:
    best: PlanChoice | None = None
    for H in hosts:
        if kind in ("unbalanced", "request_balanced") and H % 2:
            continue
        k = hosts_per_version(kind, H)
        cap = _max_requests(kind, pool)
        if k > cap:
            continue
        for T in range(1, max_repetitions + 1):
            if budget is not None:
                per_request = 2 * (cost.request + T * cost.trial)
                if per_request <= 0:
                    raise ValueError("the cost per request and trial must be positive")
                base = cost.cost(kind, H, k, T) - k * per_request
                R = min((budget - base) / per_request, cap)
                R = int(R // k) * k
                if k > R:
                    continue
            else:
                v1, v2 = (
                    layout_variance(kind, H, k, T, components),
                    layout_variance(kind, H, 2 * k, T, components),
                )
                A = (v1 - v2) * 2 * k
                B = v1 - A / k
                assert target_se is not None  # advise takes exactly one of the two
                room = target_se**2 - B
                if room <= 0:
                    continue
                R = max(k, math.ceil(A / room / k - 1e-9) * k) if A > 0 else k
                if cap < R:
                    continue
            se = math.sqrt(layout_variance(kind, H, R, T, components))
            if target_se is not None and se > target_se * (1 + 1e-9):
                continue
            choice = PlanChoice(kind, H, R, T, se, cost.cost(kind, H, R, T))
            if best is None or _key(choice, budget) < _key(best, budget):
                best = choice
    return best


def _key(choice: PlanChoice, budget: float | None) -> tuple[float, float]:
    """Least SE (then cost) under a budget; least cost (then SE) for a target SE."""
    return (choice.se, choice.cost) if budget is not None else (choice.cost, choice.se)


def advise(
    components: VarianceComponents,
    cost: CostModel,
    *,
    budget: float | None = None,
    target_se: float | None = None,
    max_hosts: int = 64,
    min_hosts: int = 2,
    max_repetitions: int = 64,
    request_pool: int | None = None,
    layouts: tuple[str, ...] = LAYOUTS,
) -> Advice:
    """Rank the layouts by their best plan under ``budget`` (least SE) or ``target_se`` (least cost).

    ``request_pool`` bounds the distinct requests available (UB and HB need 2R of them).
    """
    if (budget is None) == (target_se is None):
        raise ValueError("give exactly one of budget and target_se")
    if (budget is not None and budget <= 0) or (target_se is not None and target_se <= 0):
        raise ValueError("budget and target_se must be positive")
    if not 1 <= min_hosts <= max_hosts:
        raise ValueError("need 1 <= min_hosts <= max_hosts")
    hosts = list(range(min_hosts, max_hosts + 1))
    found, infeasible = [], []
    for kind in layouts:
        choice = _best_for_layout(
            kind, components, cost, budget, target_se, hosts, max_repetitions, request_pool
        )
        (found.append(choice) if choice else infeasible.append(kind))
    found.sort(key=lambda c: _key(c, budget))
    if not found:
        raise ValueError(
            "no layout is feasible: raise the budget or the target SE, or allow more hosts"
        )
    return Advice("budget" if budget is not None else "target_se", tuple(found), tuple(infeasible))


def conservative_components(fit: MixedEffectsResult) -> VarianceComponents:
    """Pilot components for planning: an inseparable sum goes to the term no layout cancels.

    A group holding ``request_batch`` (``host_batch``) is assigned to it: batch terms never cancel
    between versions and are not reduced by repetitions, so the advice errs toward larger SEs.
    """
    values: dict[str, float] = {}
    for label, v in fit.components.items():
        names = label.split("+")
        target = next((n for n in ("request_batch", "host_batch") if n in names), names[0])
        values[target] = values.get(target, 0.0) + max(v, 0.0)
    return VarianceComponents(**values)


def advise_from_pilot(
    y: np.ndarray,
    design: ABDesign,
    cost: CostModel,
    *,
    method: str = "auto",
    **kwargs: Any,
) -> tuple[MixedEffectsResult, Advice]:
    """Fit the pilot's components (moments on balanced pilots, else REML), then :func:`advise`."""
    fit = fit_mixed(y, design, method=method)
    return fit, advise(conservative_components(fit), cost, **kwargs)
