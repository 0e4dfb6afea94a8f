"""Two-level comparisons of a stored experiment (Bakshy & Frachtenberg, WWW 2015): the
clustered reweighting bootstrap (§5) or crossed random effects (§3), treatment minus control.

For an experiment without an A/B layout the roles map as follows: the version is the
compared factor's level (first = control, second = treatment); the request is the rest of
the configuration (benchmark and the other factors' levels); the host is the trial's host;
the batch is the round.
"""

from __future__ import annotations

import math
import sys
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang import model
from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table
from benchlang.stats.ab import ABDesign, ab_bootstrap, fit_mixed
from benchlang.stats.anova import anova


@attrs.frozen
class ComparisonResult:
    comparison: model.Comparison
    control: Any
    treatment: Any
    trials: int
    bootstrap: Any = None
    mixed: Any = None
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {
            "metric": self.comparison.metric,
            "by": self.comparison.by,
            "method": self.comparison.method,
            "control": self.control,
            "treatment": self.treatment,
            "trials": self.trials,
            "problem": self.problem,
        }
        if self.bootstrap is not None:
            out["bootstrap"] = attrs.asdict(self.bootstrap)
        if self.mixed is not None:
            out["mixed_effects"] = {
                k: (dict(v) if isinstance(v, dict) or hasattr(v, "items") else v)
                for k, v in attrs.asdict(self.mixed).items()
            }
        return out


def _codes(values: list[Any]) -> np.ndarray:
    return np.unique(np.asarray([repr(v) for v in values]), return_inverse=True)[1]


def ab_arrays(
    data: ExperimentData, comparison: model.Comparison
) -> tuple[np.ndarray, ABDesign, int, int]:
    """Measured values and their (version, request, host, batch) roles, plus trials per side."""
    factor = data.experiment.factor(comparison.by)
    control, treatment = factor.levels[0], factor.levels[1]
    t = data.table
    y = data.metrics[comparison.metric].values
    level = [lv.get(comparison.by) for lv in t.levels]
    is_control = np.array([x == control for x in level], dtype=bool)
    is_treatment = np.array([x == treatment for x in level], dtype=bool)
    keep = t.ok & np.isfinite(y) & (is_control | is_treatment)
    version = is_treatment[keep].astype(np.int8)
    others = [
        (b, tuple(sorted((k, repr(v)) for k, v in lv.items() if k != comparison.by)))
        for b, lv in zip(t.benchmark[keep], np.asarray(t.levels, dtype=object)[keep], strict=True)
    ]
    # In a layout a round is one host batch; elsewhere alternate rounds stand in for batches.
    batch = t.round[keep] if data.experiment.design.layout is not None else t.round[keep] % 2
    design = ABDesign(version, _codes(others), _codes(list(t.host[keep])), batch)
    return y[keep], design, int(is_control[keep].sum()), int(is_treatment[keep].sum())


def compare(data: ExperimentData, comparison: model.Comparison) -> ComparisonResult:
    if comparison.method == "anova":
        return _anova(data, comparison)
    factor = data.experiment.factor(comparison.by)
    y, design, n_control, n_treatment = ab_arrays(data, comparison)
    base = ComparisonResult(comparison, factor.levels[0], factor.levels[1], int(y.size))
    if n_control < 2 or n_treatment < 2:
        return attrs.evolve(base, problem="fewer than two successful trials on one side")
    settings = comparison.settings
    if comparison.method == "bootstrap":
        cluster = settings.get("cluster", "host")
        cluster = "none" if cluster == "iid" else cluster
        try:
            result = ab_bootstrap(
                y,
                design.version,
                request=design.request,
                host=design.host,
                cluster=cluster,
                replicates=settings.get("replicates", 10_000),
                weights=settings.get("weights", "poisson"),
                log=settings.get("log", False),
                interval=settings.get("interval", "clt"),
                confidence=settings.get("confidence", 95.0) / 100.0,
                seed=data.experiment.seed,
            )
        except ValueError as err:
            return attrs.evolve(base, problem=str(err))
        return attrs.evolve(base, bootstrap=result)
    try:
        fit = fit_mixed(y, design, settings.get("method", "auto"))
    except (ValueError, np.linalg.LinAlgError) as err:
        return attrs.evolve(base, problem=str(err))
    return attrs.evolve(base, mixed=fit)


def _anova(data: ExperimentData, comparison: model.Comparison) -> ComparisonResult:
    t = data.table
    y = data.metrics[comparison.metric].values
    keep = t.ok & np.isfinite(y)
    terms = comparison.settings["terms"]
    factors = {
        name: [lv.get(name) for lv, k in zip(t.levels, keep, strict=True) if k] for name in terms
    }
    base = ComparisonResult(comparison, None, None, int(keep.sum()))
    if keep.sum() < 3:
        return attrs.evolve(base, problem="fewer than three successful trials")
    try:
        result = anova(y[keep], factors, terms, comparison.settings["operators"])
    except (ValueError, np.linalg.LinAlgError) as err:
        return attrs.evolve(base, problem=str(err))
    return attrs.evolve(base, mixed=result)


def _f(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def render_comparisons(results: list[ComparisonResult], stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    boot = [r for r in results if r.bootstrap is not None]
    if boot:
        rows = []
        for r in boot:
            b = r.bootstrap
            rel = f"{100 * b.relative_effect:+.3g}%" if b.relative_effect is not None else "-"
            rows.append(
                [
                    r.comparison.metric,
                    f"{r.comparison.by}: {r.treatment} - {r.control}",
                    _f(b.estimate),
                    rel,
                    _f(b.se),
                    f"[{b.ci_low:.4g}, {b.ci_high:.4g}]",
                    f"{100 * b.confidence:g}% {b.interval}",
                    f"{b.cluster} ({b.clusters})",
                    "yes" if b.significant else "no",
                ]
            )
        render_table(
            [
                "metric",
                "difference",
                "estimate",
                "relative",
                "SE",
                "CI",
                "interval",
                "clusters",
                "significant",
            ],
            rows,
            title="comparisons: reweighting bootstrap (Bakshy & Frachtenberg §5)",
            stream=out,
        )
        for r in boot:
            if r.bootstrap.clusters < 20 and r.bootstrap.cluster != "none":
                out.write(
                    f"note: {r.comparison.metric} by {r.comparison.by}: only {r.bootstrap.clusters} {r.bootstrap.cluster} clusters; with so few the bootstrap interval is somewhat too narrow (docs/ab-designs.md)\n"
                )
    for r in results:
        if r.comparison.method == "anova" and r.mixed is not None:
            a = r.mixed
            render_table(
                ["term", "df", "sum sq", "F", "p", "η²"],
                [(x.term, x.df, x.sum_sq, x.f, x.p_value, x.eta_squared) for x in a.rows],
                title=f"ANOVA (DataMill §5): {r.comparison.metric}: {a.formula}, n = {a.n}",
                stream=out,
            )
            if not a.assumptions_hold:
                out.write(
                    f"DESCRIPTIVE ONLY: residuals are not normal (Shapiro-Wilk p = {a.residuals_normal_p:.2g}); the F tests' p-values are not trustworthy\n"
                )
            continue
        if r.mixed is not None:
            m = r.mixed
            rows = [[name, _f(v)] for name, v in m.components.items()]
            render_table(
                ["component", "variance"],
                rows,
                title=f"mixed effects ({m.method}): {r.comparison.metric} by {r.comparison.by}: effect {m.effect:.4g} ± {m.effect_se:.3g} (SE)",
                stream=out,
            )
            if m.not_identifiable:
                out.write(f"not identifiable in this design: {', '.join(m.not_identifiable)}\n")
            if m.icc is not None:
                out.write(f"ICC {m.icc:.3g}, design effect {m.design_effect:.3g}\n")
        if r.problem:
            out.write(f"{r.comparison.metric} by {r.comparison.by}: not compared: {r.problem}\n")
