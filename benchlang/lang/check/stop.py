"""Stop rules: after N, adaptive (Mittal et al., PMBS '23), or when a KPI bound is narrow enough."""

from __future__ import annotations

from benchlang import model
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context
from benchlang.lang.check.design import bounded_sizing
from benchlang.lang.diagnostics import did_you_mean

_ADAPTIVE_SCHEMA = {
    "ks": s.number(0.0, 1.0),
    "min": s.count(3),
    "max": s.count(3),
    "window": s.count(1),
    "tolerance": s.number(0.0, None),
    "constant_spread": s.number(0.0, None),
    "trend_alpha": s.number(0.0, 1.0),
    "acf_threshold": s.number(0.0, 1.0),
    "normal_p": s.number(0.0, 1.0),
    "lognormal_p": s.number(0.0, 1.0),
    "uniform_p": s.number(0.0, 1.0),
    "max_components": s.count(1),
    "confidence": s.percent,
    "bootstrap_replicates": s.count(10),
    "metric": s.word,
}
_ADAPTIVE_FIELDS = {"min": "min_n", "max": "max_n"}


def check_stop(
    ctx: Context, stop: ast.Stop | None, metrics: list[model.Metric], kpis: list[model.Kpi]
) -> model.Stop | None:
    if stop is None:
        return None
    metric_names = [m.name for m in metrics]
    if stop.kind == "after":
        if stop.count.value < 1:
            ctx.error("stop after needs at least 1 trial", stop.count.span)
            return None
        return model.Stop("after", count=stop.count.value)
    if stop.kind == "adaptive":
        checked = s.check_settings(
            stop.settings, _ADAPTIVE_SCHEMA, "stop adaptive", ctx.diagnostics
        )
        values = dict(checked.values)
        metric = values.pop("metric", None) or (
            kpis[0].metric if kpis else metric_names[0] if metric_names else "wall_time"
        )
        if "metric" in checked.values and metric not in metric_names:
            ctx.error(
                f"stop adaptive: no metric named '{metric}'",
                checked.spans["metric"],
                did_you_mean(metric, metric_names),
            )
            return None
        settings = {_ADAPTIVE_FIELDS.get(k, k): v for k, v in values.items()}
        if "confidence" in settings:
            settings["confidence"] = settings["confidence"] / 100.0
        settings.setdefault("min_n", 10)
        settings.setdefault("max_n", 400)
        if settings["min_n"] > settings["max_n"]:
            ctx.error(
                f"stop adaptive: min {settings['min_n']} exceeds max {settings['max_n']}",
                stop.span,
            )
            return None
        return model.Stop(
            "adaptive", count=settings["max_n"], settings={"metric": metric, **settings}
        )
    if stop.metric not in metric_names:
        ctx.error(
            f"stop when kpi: no metric named '{stop.metric}'",
            stop.span,
            did_you_mean(stop.metric, metric_names),
        )
        return None
    kpi = next((k for k in kpis if k.metric == stop.metric), None)
    if kpi is None:
        ctx.error(
            f"stop when kpi {stop.metric}: the metric has no kpi",
            stop.span,
            f"declare one: kpi {stop.metric} {{ percentile 50 confidence 95% }}",
        )
        return None
    width = stop.width
    if width.kind == "percent" and not 0 < width.value < 100:
        ctx.error("the width must lie in (0%, 100%)", width.span)
        return None
    if width.kind != "percent" and float(width.value) <= 0:
        ctx.error("the width must be positive", width.span)
        return None
    max_n = stop.max_count.value if stop.max_count is not None else 400
    need = bounded_sizing(kpi.percentile, kpi.confidence, kpi.exclude)
    if max_n < need:
        ctx.error(
            f"stop when kpi {kpi.metric}: max {max_n} is below the {need} trials the kpi needs",
            stop.max_count.span if stop.max_count else stop.span,
            f"use max {need} or more",
        )
        return None
    return model.Stop(
        "kpi_width",
        count=max_n,
        settings={
            "metric": kpi.metric,
            "percentile": kpi.percentile,
            "confidence": kpi.confidence,
            "bound": kpi.bound,
            "width": width.value / 100.0 if width.kind == "percent" else float(width.value),
            "relative": width.kind == "percent",
            "max_n": max_n,
        },
    )
