"""Warm-up and cool-down advice for an A/B layout run (Bakshy & Frachtenberg, WWW 2015, §2.2):
the fitted effect of each position at either end of a host batch against its middle, and the
autocorrelation of the per-request residuals at lags 1..k with its white-noise bound
(stats.ab.warmup), from every trial that ran (warm-up and cool-down included, so the count is
from the start of the batch). ``analyze`` prints the summary; ``advise`` the lags too."""

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

    def positions(self) -> list[dict[str, Any]]:
        """The tested positions at each end: where, the fitted effect, its SE, within noise."""
        s = self.suggestion
        if s is None:
            return []
        n = s.position_mean.size
        out = []
        for end, index in (("start", range(s.tested)), ("end", range(s.tested))):
            for i in index:
                at = i if end == "start" else n - 1 - i
                effect, se = float(s.position_mean[at]), float(s.position_se[at])
                out.append(
                    {
                        "from": end,
                        "position": i + 1,
                        "effect": effect,
                        "se": se,
                        "within_noise": bool(abs(effect) <= s.z * se),
                    }
                )
        return out

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
            "noise_z": s.z if s else None,
            "lag_z": s.lag_z if s else None,
            "positions": self.positions(),
            "lags": (
                [
                    {
                        "lag": int(k),
                        "autocorrelation": float(r),
                        "expected": float(e),
                        "after_positions": float(a),
                        "expected_after_positions": float(ea),
                        "bound": float(b),
                        "beyond": bool(abs(a - ea) > b),
                    }
                    for k, r, e, a, ea, b in zip(
                        s.lags,
                        s.acf,
                        s.acf_null,
                        s.acf_after,
                        s.acf_null_after,
                        s.acf_bound,
                        strict=True,
                    )
                ]
                if s
                else []
            ),
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


def render_warmup_detail(advice: list[WarmupAdvice], stream: TextIO | None = None) -> None:
    """What the advice rests on (§2.2: show the lags): the fitted position effects and the
    autocorrelation at each lag with its bound, then the recommendation."""
    out = stream or sys.stdout
    for a in advice:
        s = a.suggestion
        if s is None:
            out.write(f"warm-up advice for {a.metric}: not possible: {a.problem}\n")
            continue
        render_table(
            ["from", "position", "effect", "SE", "within noise"],
            [
                (
                    p["from"],
                    p["position"],
                    p["effect"],
                    p["se"],
                    "yes" if p["within_noise"] else "NO",
                )
                for p in a.positions()
            ],
            title=(
                f"{a.metric}: position effect against the middle of the host batch, {s.batches} "
                f"batches (within noise: |effect| <= {s.z:.3g} SE, Bonferroni over "
                f"{2 * s.tested} positions at 5%)"
            ),
            stream=out,
        )
        render_table(
            [
                "lag",
                "autocorrelation",
                "after position effects",
                "expected after, if independent",
                "bound",
            ],
            [
                (int(k), float(r), float(x), float(e), f"±{b:.3g}")
                for k, r, x, e, b in zip(
                    s.lags, s.acf, s.acf_after, s.acf_null_after, s.acf_bound, strict=True
                )
            ],
            title=(
                f"{a.metric}: autocorrelation of the per-request residuals in execution order "
                f"(independent errors give the expected value, below 0 as the residuals share "
                f"their request's mean; bound: ±{s.lag_z:.3g} null SDs, Bonferroni over "
                f"{s.lags.size} lags at 5%)"
            ),
            stream=out,
        )
        beyond = s.dependent_lags.tolist()
        out.write(
            f"recommendation for {a.metric}: warmup {s.warmup} cooldown {s.cooldown} "
            f"(the layout has warmup {a.given_warmup} cooldown {a.given_cooldown}; counted from "
            "the batch's ends, the layout's own warm-up included)\n"
        )
        if beyond:
            out.write(
                f"note: {a.metric}: after the position effects, lag"
                f"{'s' if len(beyond) > 1 else ''} {', '.join(map(str, beyond))} lie beyond the "
                "bound (on independent errors some lag does in 5% of pilots): neighbouring "
                "trials influence each other; host clusters (the default) carry it\n"
            )
