"""One protocol at several runtimes (``factor runtime in [30s, 60s]``): how many trials of each
runtime had a converged metric, side by side, as TriScale's Fig. 4 compares a 30 s and a 60 s
run of the same protocol (Jacob et al., JSys 1(1) 2021, §4.1 and §4.6: a longer run may be
needed for the metric's Theil-Sen convergence test to pass)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table


@attrs.frozen
class RuntimeConvergence:
    """One metric at one runtime level: its successful trials, and how many converged."""

    metric: str
    runtime: float
    configurations: int
    trials: int
    converged: int

    @property
    def share(self) -> float | None:
        return self.converged / self.trials if self.trials else None

    def to_dict(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "share_converged": self.share}


def runtime_convergence(data: ExperimentData) -> list[RuntimeConvergence]:
    """Per metric with a convergence test and per runtime level (in declared order), the
    converged share of its successful trials; empty without a runtime factor."""
    exp = data.experiment
    factor = next((f for f in exp.factors if f.name == "runtime"), None)
    if factor is None:
        return []
    table = data.table
    level_of = {index: levels.get("runtime") for index, _, _, levels in data.configurations()}
    runtime = np.array([level_of.get(int(c)) for c in table.configuration], dtype=object)
    out = []
    for name, mv in data.metrics.items():
        if mv.converged is None:
            continue
        for level in factor.levels:
            mask = (runtime == level) & table.ok
            out.append(
                RuntimeConvergence(
                    name,
                    float(level),
                    sum(1 for c, v in level_of.items() if v == level),
                    int(mask.sum()),
                    int(mv.converged[mask].sum()),
                )
            )
    return out


def render_runtime_convergence(
    rows: list[RuntimeConvergence], stream: TextIO | None = None
) -> None:
    if not rows:
        return
    render_table(
        ["metric", "runtime", "configurations", "trials", "converged", "share"],
        [
            [
                r.metric,
                f"{r.runtime:g} s",
                r.configurations,
                r.trials,
                r.converged,
                "-" if r.share is None else f"{100 * r.share:.3g}%",
            ]
            for r in rows
        ],
        title="Convergence by runtime (TriScale §4.1, Fig. 4: the metric's Theil-Sen test)",
        stream=stream or sys.stdout,
        align=["left", "right", "right", "right", "right", "right"],
    )
