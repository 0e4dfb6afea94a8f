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
