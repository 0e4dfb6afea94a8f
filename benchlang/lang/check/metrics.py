"""Metrics (a measure aggregated per trial), KPIs and variability scores over them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs

from benchlang import model
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context
from benchlang.lang.check.derived import check_expression, shown_unit
from benchlang.lang.check.methods import check_method_settings, find_method
from benchlang.lang.diagnostics import Span, did_you_mean

_CONVERGENCE_SCHEMA = {"confidence": s.percent, "tolerance": s.percent}


def check_metrics(
    ctx: Context,
    metrics: list[ast.Metric],
    measures: dict[str, bool],
    builtin_units: dict[str, str],
) -> list[model.Metric]:
    """``builtin_units``: the unit of each measure that renames a built-in (``measure time = wall_time``)."""
    ctx.unique(metrics, "metric")
    out = []
    for m in metrics:

        def stmts(kw: str, m: ast.Metric = m) -> list[Any]:
            return [i for i in m.items if i.keyword == kw]

        if m.expression is not None:
            derived = check_derived(ctx, m, m.expression, measures, builtin_units)
            if derived is not None:
                out.append(derived)
            continue
        of = ctx.single(stmts("of"), f"'of' in metric {m.name}")
        measure_name = of.value.value if of else m.name
        if measure_name not in measures:
            span = of.value.span if of else m.span
            hint = (
                did_you_mean(measure_name, measures)
                or f"declare it in a benchmark (measure {measure_name} ...) or use 'of' to name a measure"
            )
            ctx.error(f"metric '{m.name}' refers to no measure named '{measure_name}'", span, hint)
            continue
        aggregate: str | float = "mean"
        agg = ctx.single(stmts("measure"), f"'measure' in metric {m.name}")
        if agg is not None:
            if agg.flag == "percentile":
                try:
                    aggregate = s.percentile(agg.value)
                except s.Invalid as err:
                    ctx.error(err.message, agg.value.span, err.hint)
                    continue
            else:
                aggregate = agg.value.value
        unit = ctx.single(stmts("unit"), f"'unit' in metric {m.name}")
        better = ctx.single(stmts("better"), f"'better' in metric {m.name}")
        trim = check_trim(ctx, ctx.single(stmts("trim"), f"'trim' in metric {m.name}"))
        convergence = None
        if m.convergence is not None:
            checked = s.check_settings(
                m.convergence,
                _CONVERGENCE_SCHEMA,
                f"convergence of metric {m.name}",
                ctx.diagnostics,
            )
            convergence = model.Convergence(**checked.values)
        series = measures[measure_name]
        if (convergence is not None or trim is not None) and not series:
            what = "a convergence test" if convergence is not None else "trim"
            ctx.error(
                f"metric '{m.name}': {what} needs a raw series per trial, but '{measure_name}' is a single number",
                m.convergence_span or m.span,
                f"declare it as: measure {measure_name} series from ...",
            )
            continue
        out.append(
            model.Metric(
                name=m.name,
                measure=measure_name,
                aggregate=aggregate,
                unit=unit.value.value
                if unit
                else model.BUILTIN_MEASURES.get(measure_name, builtin_units.get(measure_name)),
                better=better.value.value if better else "lower",
                convergence=convergence,
                trim=trim,
            )
        )
    return out


def check_derived(
    ctx: Context,
    m: ast.Metric,
    node: ast.Arith,
    measures: dict[str, bool],
    builtin_units: dict[str, str],
) -> model.Metric | None:
    """``metric NAME = EXPRESSION [{ unit ... better ... }]``: one value per trial."""
    for item in m.items:
        if item.keyword in ("of", "measure", "trim"):
            ctx.error(
                f"'{item.keyword}' does not apply to derived metric '{m.name}': its value per trial is the expression",
                item.span,
            )
    if m.convergence is not None:
        ctx.error(
            f"a convergence test does not apply to derived metric '{m.name}'", m.convergence_span
        )
    units: dict[str, str | None] = {**builtin_units, **model.BUILTIN_MEASURES}
    expression, unit = check_expression(ctx, node, m.name, measures, units)
    if expression is None:
        return None
    unit_stmt = ctx.single(
        [i for i in m.items if i.keyword == "unit"], f"'unit' in metric {m.name}"
    )
    better = ctx.single(
        [i for i in m.items if i.keyword == "better"], f"'better' in metric {m.name}"
    )
    return model.Metric(
        name=m.name,
        measure=expression.text(),
        unit=unit_stmt.value.value if unit_stmt else shown_unit(unit),
        better=better.value.value if better else "lower",
        expression=expression,
    )


def check_trim(ctx: Context, stmt: ast.Statement | None) -> model.Trim | None:
    if stmt is None:
        return None
    v = stmt.value
    assert v is not None  # the grammar's trim always has its value
    if v.kind == "percent":
        if not 0.0 <= v.value < 100.0:
            ctx.error(f"trim {v.value:g}% must lie in [0%, 100%)", v.span)
            return None
        return model.Trim("fraction", v.value / 100.0)
    if v.kind == "duration":
        return model.Trim("duration", v.value)
    return model.Trim("samples", float(v.value))


def metric_of_block(
    ctx: Context, block: ast.Block, metrics: list[model.Metric]
) -> model.Metric | None:
    metric = next((m for m in metrics if m.name == block.name), None)
    if metric is None:
        assert block.name is not None  # the grammar names the metric of a kpi and a variability
        names = [m.name for m in metrics]
        hint = did_you_mean(block.name, names) or f"declare it first: metric {block.name} {{ ... }}"
        ctx.error(f"{block.keyword} on undeclared metric '{block.name}'", block.span, hint)
    return metric


_KPI_ARGUMENTS = ("percentile", "confidence", "bound", "exclude")
"""What every kpi method takes; its other settings travel in ``Kpi.options``."""


def first_per_metric(ctx: Context, blocks: list[ast.Block], what: str) -> Iterator[ast.Block]:
    """The blocks of one kind, each metric's first; a second one for a metric is an error
    that points at the first."""
    seen: dict[str | None, Span] = {}
    for block in blocks:
        if block.name in seen:
            ctx.error(
                f"duplicate {what} for metric '{block.name}'",
                block.span,
                f"first declared on line {seen[block.name].line}",
            )
            continue
        seen[block.name] = block.span
        yield block


def check_kpis(
    ctx: Context, blocks: list[ast.Block], metrics: list[model.Metric]
) -> list[model.Kpi]:
    out: list[model.Kpi] = []
    for block in first_per_metric(ctx, blocks, "kpi"):
        errors = len(ctx.diagnostics)
        kpi = _check_kpi(ctx, block, metrics)
        if kpi is not None:
            out.append(kpi)
        elif len(ctx.diagnostics) > errors and block.name is not None:
            ctx.broken_kpis.add(block.name)
    return out


def _check_kpi(ctx: Context, block: ast.Block, metrics: list[model.Metric]) -> model.Kpi | None:
    """The kpi of one block; None after an error about it."""
    metric = metric_of_block(ctx, block, metrics)
    method = find_method(ctx, block.method or "thompson", block.method_span or block.span, "kpi")
    if method is None:
        return None
    settings = _one_sided_only(ctx, block, method)
    if not {"percentile", "confidence"} <= {p.name for p in method.parameters}:
        ctx.error(
            f"kpi method '{method.name}' does not declare the parameters percentile and "
            "confidence that every kpi method takes (docs/plugins.md)",
            block.method_span or block.span,
        )
        return None
    checked = check_method_settings(ctx, method, settings, f"kpi {block.name}", block.span)
    v = {**method.defaults(), **checked.values}
    if metric is None or not {"percentile", "confidence"} <= v.keys():
        return None
    default_bound = "upper" if metric.better == "lower" else "lower"
    refusal = method.refusal({"bound": default_bound, **v})
    if refusal is not None and settings is block.settings:  # else refused two-sided
        ctx.error(
            f"kpi {block.name}: {refusal}",
            block.method_span or block.span,
            "use thompson (exact at any n): kpi without 'with', or see "
            f"benchlang plugins --describe {method.name}",
        )
    return model.Kpi(
        metric.name,
        v["percentile"],
        v["confidence"],
        v.get("bound", default_bound),
        v.get("exclude", 0),
        method.name,
        tuple(sorted((k, x) for k, x in v.items() if k not in _KPI_ARGUMENTS)),
    )


def _one_sided_only(ctx: Context, block: ast.Block, method: Any) -> ast.Settings:
    """``bound both`` with a kpi method that declares one-sided bounds only: refused with the
    reason (its coverage is not known two-sided) and the method that gives the interval; the
    settings are then checked without it (one error, not a cascade)."""
    both = [
        item
        for item in block.settings.items
        if item.key == "bound" and item.value is not None and item.value.value == "both"
    ]
    parameter = method.parameter("bound")
    if not both or (parameter is not None and "both" in parameter.choices):
        return block.settings
    ctx.error(
        f"kpi {block.name}: {method.name} gives one-sided bounds only; its two-sided coverage "
        "is not established",
        both[0].span,
        "bound both is Thompson's equal-tailed interval (exact at any n from its minimum): "
        "kpi without 'with'",
    )
    kept = tuple(item for item in block.settings.items if item not in both)
    return attrs.evolve(block.settings, items=kept)


def check_variabilities(
    ctx: Context, blocks: list[ast.Block], metrics: list[model.Metric]
) -> list[model.Variability]:
    out: list[model.Variability] = []
    for block in first_per_metric(ctx, blocks, "variability"):
        metric = metric_of_block(ctx, block, metrics)
        method = find_method(ctx, "variability", block.span, "variability")
        if method is None:
            continue
        checked = check_method_settings(
            ctx, method, block.settings, f"variability {block.name}", block.span
        )
        if metric is None or not {"percentile", "confidence"} <= checked.values.keys():
            continue
        out.append(
            model.Variability(
                metric.name, checked.values["percentile"], checked.values["confidence"]
            )
        )
    return out
