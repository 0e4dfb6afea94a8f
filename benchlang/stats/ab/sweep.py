"""The standard error of the estimated difference as requests and hosts grow, per layout
(Bakshy & Frachtenberg, WWW 2015, §4.2.1, Figs. 2 and 4): analytic from variance components
(``designs.layout_se``), with simulated points (``simulate.simulate_outcomes``) that check it.

The SE falls as ``1/sqrt(R)`` only down to the floor the host terms set: ``2 [(nu_H - omega_H)
s2_host + nu_H s2_host_batch] / (R T)`` with ``nu_H = R T / k`` for k hosts per version is
``2 (...) / k``, which more requests never reduce; more hosts do.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from benchlang.design.layouts import LAYOUTS, check_layout, layout_schedule
from benchlang.stats.ab.designs import VarianceComponents, layout_se
from benchlang.stats.ab.simulate import ABDesign, simulate_outcomes


@attrs.frozen
class SEPoint:
    """One (layout, H, R, T): the analytic SE and, where simulated, the SD of the estimate over
    ``experiments`` simulated experiments (NaN where not simulated)."""

    layout: str
    hosts: int
    requests: int
    repetitions: int
    analytic_se: float
    simulated_sd: float = float("nan")


@attrs.frozen
class SESweep:
    """The sweep's points, the components it used and the layouts/sizes it could not form."""

    components: VarianceComponents
    points: tuple[SEPoint, ...]
    experiments: int
    seed: int
    skipped: tuple[str, ...] = ()

    def se(self, layout: str, hosts: int, requests: int) -> float:
        return next(
            p.analytic_se
            for p in self.points
            if (p.layout, p.hosts, p.requests) == (layout, hosts, requests)
        )


def request_grid(low: int, high: int, steps: int = 9) -> tuple[int, ...]:
    """Requests per version from ``low`` to ``high``, about evenly spaced on a log scale."""
    if not 1 <= low <= high:
        raise ValueError("need 1 <= low <= high requests")
    grid = np.unique(np.round(np.geomspace(low, high, steps)).astype(int))
    return tuple(int(r) for r in grid)


def simulated_sd(
    layout: str,
    hosts: int,
    requests: int,
    repetitions: int,
    components: VarianceComponents,
    experiments: int,
    rng: np.random.Generator,
    seed: int = 0,
) -> float:
    """SD of the difference in version means over simulated experiments of Eq. 3-4 (§6)."""
    design = ABDesign.from_schedule(
        layout_schedule(layout, hosts, requests, repetitions, seed=seed)
    )
    Y = simulate_outcomes(design, components, experiments, rng)
    treat = design.version == 1
    est = Y[:, treat].mean(axis=1) - Y[:, ~treat].mean(axis=1)
    return float(np.std(est, ddof=1))


def se_sweep(
    components: VarianceComponents,
    hosts: Sequence[int],
    requests: Sequence[int],
    repetitions: int = 1,
    *,
    layouts: Sequence[str] = LAYOUTS,
    experiments: int = 200,
    simulate_every: int = 2,
    seed: int = 0,
) -> SESweep:
    """Analytic SE of every layout at every H and R (§4.2.1), and the simulated SD at every
    ``simulate_every``-th R (0: none), ``experiments`` data sets each. A layout that cannot
    be formed (odd H for UB and RB, fewer requests than hosts per version) is skipped and named.
    """
    if experiments < 2 and simulate_every:
        raise ValueError("experiments must be >= 2")
    rng = np.random.default_rng(seed)
    points, skipped = [], []
    for kind in layouts:
        for H in hosts:
            for i, R in enumerate(requests):
                try:
                    check_layout(kind, H, R, repetitions)
                except ValueError as err:
                    skipped.append(f"{kind} H={H} R={R}: {err}")
                    continue
                sd = float("nan")
                if simulate_every and i % simulate_every == 0:
                    sd = simulated_sd(kind, H, R, repetitions, components, experiments, rng, seed)
                points.append(
                    SEPoint(
                        kind, H, R, repetitions, layout_se(kind, H, R, repetitions, components), sd
                    )
                )
    return SESweep(components, tuple(points), experiments, seed, tuple(skipped))
