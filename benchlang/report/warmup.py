"""Warm-up and cool-down advice for an A/B layout run (Bakshy & Frachtenberg, WWW 2015, §2.2):
how many trials at each end of a host batch still differ from its middle, from every trial that
ran (warm-up and cool-down included, so the count is from the start of the batch)."""

from __future__ import annotations

import sys
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang import model
from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table
from benchlang.stats.ab.warmup import WarmupSuggestion, suggest_warmup


@attrs.frozen
class WarmupAdvice:
    metric: str
    given_warmup: int
    given_cooldown: int
    suggestion: WarmupSuggestion | None
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        s = self.suggestion
        return {
            "metric": self.metric,
            "warmup": self.given_warmup,
            "cooldown": self.given_cooldown,
            "suggested_warmup": s.warmup if s else None,
            "suggested_cooldown": s.cooldown if s else None,
            "lag1_autocorrelation": s.autocorrelation if s else None,
            "batches": s.batches if s else None,
            "problem": self.problem,
        }


def warmup_advice(data: ExperimentData) -> list[WarmupAdvice]:
    """One suggestion per compared metric (every metric when nothing is compared).

    ``data`` must hold every phase (``load_data(..., all_phases=True)``); a batch's position is
    its trial's position in the plan, and failed trials are left out.
    """
    layout = data.experiment.design.layout
    if layout is None:
        return []
    t = data.table
    names = list(dict.fromkeys(c.metric for c in data.experiment.comparisons)) or [
        m.name for m in data.experiment.metrics
    ]
    request = np.unique(
        np.array([repr(lv.get(model.REQUEST_FACTOR)) for lv in t.levels], dtype=object),
        return_inverse=True,
    )[1]
    out = []
    for name in names:
        y = data.metrics[name].values
        keep = t.ok & np.isfinite(y)
        try:
            suggestion = suggest_warmup(y[keep], request[keep], t.round[keep], t.position[keep])
        except ValueError as err:
            out.append(WarmupAdvice(name, layout.warmup, layout.cooldown, None, str(err)))
            continue
        out.append(WarmupAdvice(name, layout.warmup, layout.cooldown, suggestion))
    return out


def render_warmup_advice(advice: list[WarmupAdvice], stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    rows = []
    for a in advice:
        s = a.suggestion
        if s is None:
            out.write(f"warm-up advice for {a.metric}: not possible: {a.problem}\n")
            continue
        rows.append(
            [
                a.metric,
                a.given_warmup,
                s.warmup,
                a.given_cooldown,
                s.cooldown,
                s.autocorrelation,
                s.batches,
            ]
        )
    if rows:
        render_table(
            [
                "metric",
                "warmup (spec)",
                "suggested",
                "cooldown (spec)",
                "suggested",
                "lag-1 autocorrelation",
                "batches",
            ],
            rows,
            title="warm-up and cool-down per host batch, counted from its start (Bakshy & Frachtenberg §2.2)",
            stream=out,
        )
        for a in advice:
            s = a.suggestion
            if s is not None and (s.warmup > a.given_warmup or s.cooldown > a.given_cooldown):
                out.write(
                    f"note: {a.metric}: the ends of the host batches still differ from their middle; set warmup {max(s.warmup, a.given_warmup)} cooldown {max(s.cooldown, a.given_cooldown)} in the layout\n"
                )
