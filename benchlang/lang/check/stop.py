"""Stop rules, each a ``stopping`` method of the statistics registry: ``stop NAME { ... }``,
with the shorthands ``stop after N`` (method after) and ``stop when kpi M width < W max N``
(method kpi_width). Built-ins: after, kpi_width, adaptive (Mittal et al., PMBS '23)."""

from __future__ import annotations

from typing import Any

from benchlang import model
from benchlang.lang import ast
from benchlang.lang.check.context import Context
from benchlang.lang.check.design import bounded_sizing
from benchlang.lang.check.methods import check_method_settings, find_method
from benchlang.lang.diagnostics import Span, did_you_mean

_ADAPTIVE_FIELDS = {"min": "min_n", "max": "max_n"}


def check_stop(
    ctx: Context, stop: ast.Stop | None, metrics: list[model.Metric], kpis: list[model.Kpi]
) -> model.Stop | None:
    if stop is None:
        return None
    metric_names = [m.name for m in metrics]
    if stop.kind == "after":
        assert stop.count is not None  # stop after N
        return _after(ctx, stop.count.value, stop.count.span)
    if stop.kind == "when":
        width = stop.width
        assert width is not None and stop.metric is not None  # stop when kpi M width < W
        amount = ("percent", width.value) if width.kind == "percent" else width.value
        max_n = stop.max_count.value if stop.max_count is not None else 400
        max_span = stop.max_count.span if stop.max_count else stop.span
        return _kpi_width(
            ctx, stop.metric, stop.span, amount, width.span, max_n, max_span, metric_names, kpis
        )
    name = stop.kind if stop.kind == "adaptive" else stop.name
    assert name is not None  # stop NAME { ... }
    method = find_method(ctx, name, stop.span, "stopping")
    if method is None:
        return None
    checked = check_method_settings(ctx, method, stop.settings, f"stop {name}")
    values = dict(checked.values)
    if name == "after":
        return _after(ctx, values["count"], checked.spans["count"]) if "count" in values else None
    if name == "kpi_width":
        if "metric" not in values or "width" not in values:
            return None
        spans = checked.spans
        max_n = values.get("max", 400)
        return _kpi_width(
            ctx,
            values["metric"],
            spans["metric"],
            values["width"],
            spans["width"],
            max_n,
            spans.get("max", stop.span),
            metric_names,
            kpis,
        )
    watched = values.pop("metric", None) or (
        kpis[0].metric if kpis else metric_names[0] if metric_names else "wall_time"
    )
    if "metric" in checked.values and watched not in metric_names:
        ctx.error(
            f"stop {name}: no metric named '{watched}'",
            checked.spans["metric"],
            did_you_mean(watched, metric_names),
        )
        return None
    if name != "adaptive":
        return model.Stop(name, count=values.get("max"), settings={"metric": watched, **values})
    settings = {_ADAPTIVE_FIELDS.get(k, k): v for k, v in values.items()}
    settings.setdefault("min_n", 10)
    settings.setdefault("max_n", 400)
    if settings["min_n"] > settings["max_n"]:
        ctx.error(
            f"stop adaptive: min {settings['min_n']} exceeds max {settings['max_n']}",
            stop.span,
        )
        return None
    return model.Stop("adaptive", count=settings["max_n"], settings={"metric": watched, **settings})


def _after(ctx: Context, count: int, span: Span) -> model.Stop | None:
    if count < 1:
        ctx.error("stop after needs at least 1 trial", span)
        return None
    return model.Stop("after", count=count)


def _kpi_width(
    ctx: Context,
    metric: str,
    span: Span,
    width: Any,
    width_span: Span,
    max_n: int,
    max_span: Span,
    metric_names: list[str],
    kpis: list[model.Kpi],
) -> model.Stop | None:
    if metric not in metric_names:
        ctx.error(
            f"stop when kpi: no metric named '{metric}'", span, did_you_mean(metric, metric_names)
        )
        return None
    kpi = next((k for k in kpis if k.metric == metric), None)
    if kpi is None:
        ctx.error(
            f"stop when kpi {metric}: the metric has no kpi",
            span,
            f"declare one: kpi {metric} {{ percentile 50 confidence 95% }}",
        )
        return None
    relative = isinstance(width, tuple)
    value = float(width[1]) if relative else float(width)
    if relative and not 0 < value < 100:
        ctx.error("the width must lie in (0%, 100%)", width_span)
        return None
    if not relative and value <= 0:
        ctx.error("the width must be positive", width_span)
        return None
    if kpi.method != "thompson":
        ctx.error(
            f"stop when kpi {kpi.metric}: the width rule watches Thompson's bound, and this kpi "
            f"is computed by {kpi.method}",
            span,
            "use stop adaptive { ... }, or stop after N",
        )
        return None
    if kpi.bound == "both":
        ctx.error(
            f"stop when kpi {kpi.metric}: the width rule watches a one-sided bound, and this "
            "kpi is two-sided (bound both)",
            span,
            "give the kpi an upper or lower bound, or use stop adaptive { ... }",
        )
        return None
    need = bounded_sizing(kpi.percentile, kpi.confidence, kpi.exclude)
    if max_n < need:
        ctx.error(
            f"stop when kpi {kpi.metric}: max {max_n} is below the {need} trials the kpi needs",
            max_span,
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
            "width": value / 100.0 if relative else value,
            "relative": relative,
            "max_n": max_n,
        },
    )
