"""Counting a design: how many levels coverage keeps, how many trials a design plans.

Pure arithmetic on the validated model, shared by the checker (limits, sizing messages) and the
planner, so both count the same way.
"""

from __future__ import annotations

import math

from benchlang import model
from benchlang.design.layouts import layout_counts


def covered_count(n_levels: int, coverage: float) -> int:
    """How many of ``n_levels`` levels ``coverage N%`` keeps: ceil(N% x L), at least one."""
    return max(1, math.ceil(coverage / 100.0 * n_levels - 1e-9))


def plan_counts(
    design: model.Design,
    n_configs: int,
    warmups: int = 0,
    hosts: int = 1,
    owners: int | None = None,
) -> tuple[int, int]:
    """(configurations, trials) of a plan, warm-up trials included: what ``plan`` derives,
    counted without building it, so ``check`` says the same (docs/hardware-factors.md).

    ``n_configs`` software configurations (one host set's), ``warmups`` the warm-up trials
    of one round of them (``warmup`` per benchmark or design), ``hosts`` the hosts the
    rounds go round over (the backend's, the chosen ones with ``hosts where`` or hardware
    factors, the equal hosts with ``redundancy``), ``owners`` the host sets with hardware
    levels of their own (None: no hardware factor). With hardware factors or redundancy
    every host runs every round of its configurations (DataMill §4.1-4.2), otherwise the
    rounds are shared; warm-up runs in the first round of each series on each host."""
    if design.layout is not None:
        return n_configs, trial_count(design, n_configs)
    spread = hosts if owners is not None or design.redundancy > 1 else 1
    per_series = design.runs * (2 if design.order == "fixed_vs_random" else 1) * spread
    measured = n_configs * per_series * design.series
    warm = design.series * min(hosts, per_series) * warmups
    return n_configs * (owners or 1), measured + warm


def trial_count(design: model.Design, n_configs: int) -> int:
    """Trials a design plans: runs x series x configurations (x N equal hosts with
    ``redundancy N``; per set of hardware levels with hardware factors), or the layout's."""
    if design.layout is not None:
        L = design.layout
        return layout_counts(L.kind, L.hosts, L.requests, L.repetitions, L.warmup, L.cooldown)[
            "trials"
        ]
    per_series = design.runs * (2 if design.order == "fixed_vs_random" else 1)
    return n_configs * per_series * design.series * design.redundancy
