"""The design: runs and series sized from the KPIs and variability scores (Thompson, TriScale
Eq. 4), or a layout (A/B; the layout itself is checked in lang.ab_design); and the plan's size."""

from __future__ import annotations

import math
from typing import Any

import attrs

from benchlang import model
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.ab_design import AB_KEYS, NOT_WITH_LAYOUT, ABDesign
from benchlang.lang.check.benchmarks import warmup_count
from benchlang.lang.check.context import MAX_TRIALS, Context
from benchlang.lang.diagnostics import Span
from benchlang.stats.sizing import sizing
from benchlang.stats.variability_sizing import variability_sizing

_DESIGN_SCHEMA = {
    "runs": s.count_or_auto,
    "series": s.count_or_auto,
    "runtime": s.duration,
    "span": s.duration_or_auto,
    "order": s.choice(*model.ORDERS),
    "layout": None,
    "versions": None,
    "requests": None,
    "replicate": s.count(1),
    "redundancy": s.count(1),
    "warmup": warmup_count,
    "cooldown": s.count(0),
}
NOT_YET_DESIGN: tuple[str, ...] = ()


def bounded_sizing(
    percentile: float, confidence: float, exclude: int = 0, two_sided: bool = False
) -> int:
    """Thompson sizing (one-sided, or the equal-tailed two-sided interval), or a cheap lower
    estimate when that is beyond MAX_TRIALS anyway (the exact search with excluded samples
    costs time and memory linear in N)."""
    first = sizing(percentile, confidence, two_sided=two_sided)
    estimate = first + exclude / (1.0 - max(percentile, 100.0 - percentile) / 100.0)
    if estimate > MAX_TRIALS:
        return math.ceil(estimate)
    return sizing(percentile, confidence, exclude, two_sided)


def check_plan_size(
    ctx: Context,
    factors: list[model.Factor],
    benchmarks: list[model.Benchmark],
    design: model.Design,
    where: Any,
) -> None:
    from benchlang.design.counting import covered_count, trial_count

    kept = {f.name: covered_count(len(f.levels), f.coverage) for f in factors}
    sizes = [math.prod(kept.get(n, 1) for n in b.factors) for b in benchmarks]
    trials = trial_count(design, sum(sizes))
    if design.layout is None:
        warm = [design.warmup if b.warmup is None else b.warmup for b in benchmarks]
        trials += design.series * sum(n * w for n, w in zip(sizes, warm, strict=True))
    if trials > MAX_TRIALS:
        ctx.error(
            f"the plan would have {trials} trials, more than benchlang plans ({MAX_TRIALS})",
            where.span,
            "use fewer runs, series or levels (coverage N% keeps a share of a factor's levels)",
        )


def kpi_need(ctx: Context, k: model.Kpi) -> int:
    """The trials per series a KPI needs: Thompson's sizing (bounded), or what its kpi method
    declares (``Method.needs``)."""
    if k.method == "thompson":
        return bounded_sizing(k.percentile, k.confidence, k.exclude, k.bound == "both")
    from benchlang.stats.registry import statistics_methods

    methods = ctx.methods if ctx.methods is not None else statistics_methods()
    settings = {"percentile": k.percentile, "confidence": k.confidence, "bound": k.bound}
    return methods[k.method].needs({**settings, "exclude": k.exclude, **dict(k.options)})


def check_design(
    ctx: Context,
    block: ast.Block | None,
    kpis: list[model.Kpi],
    variabilities: list[model.Variability],
    stop: model.Stop | None,
    ab: ABDesign | None,
    stop_span: Span | None = None,
    profiles: int = 0,
    method_needs: list[tuple[int, str]] | None = None,
) -> model.Design:
    """``method_needs``: (trials per compared level, which comparison) the analysis's methods
    ask for (``Method.needs``); ``runs auto`` gives each level at least that many."""
    checked = s.check_settings(
        block.settings if block else None,
        _DESIGN_SCHEMA,
        "design",
        ctx.diagnostics,
        blocks=AB_KEYS,
    )
    for key in NOT_YET_DESIGN:
        if key in checked.spans:
            ctx.not_supported(f"design '{key}'", checked.spans[key])
    for key in ("warmup", "cooldown") if ab is not None else ("cooldown",):
        if key in checked.spans:
            ctx.error(
                f"'{key}' belongs in the layout block",
                checked.spans[key],
                f"layout fully_balanced {{ hosts 4 {key} 2 }}",
            )
    if ab is not None:
        return layout_design(ctx, ab, checked, stop, stop_span)
    v = checked.values
    span = block.span if block else None
    runs_wanted = v.get("runs")
    kpi_needs = [(kpi_need(ctx, k), k) for k in kpis]
    if stop is not None:
        if runs_wanted is not None:
            ctx.error(
                "give either 'runs' in the design or a stop rule, not both (the stop rule sets the number of runs)",
                checked.spans.get("runs"),
            )
        runs_wanted = stop.count
    sized = runs_wanted == "auto" or (runs_wanted is None and kpi_needs)
    if sized and not kpi_needs and method_needs:
        runs, reason = 1, ""
    elif sized:
        if not kpi_needs and ctx.broken_kpis:
            runs, reason = 1, ""  # the kpi's own error says what to fix
        elif not kpi_needs:
            ctx.error(
                "runs auto needs a kpi to size the experiment",
                checked.spans.get("runs", span),
                "declare a kpi, or give a number: runs 30",
            )
            runs, reason = 1, ""
        else:
            runs, kpi = max(kpi_needs, key=lambda x: x[0])
            reason = (
                f"minimal N for kpi {kpi.metric} (percentile {kpi.percentile:g}, confidence {kpi.confidence:g}%"
                + (f", {kpi.exclude} excluded" if kpi.exclude else "")
                + (
                    ", two-sided) by Thompson's order statistics, both sides at (1 + C)/2 "
                    "(TriScale Eq. 4; Hahn & Meeker §5.2)"
                    if kpi.method == "thompson" and kpi.bound == "both"
                    else ") by Thompson's order statistics (TriScale Eq. 4)"
                    if kpi.method == "thompson"
                    else f"), the minimal sample its method {kpi.method} declares"
                )
            )
    elif runs_wanted is None:
        runs, reason = 1, "default: one trial per configuration and series (no kpi declared)"
    else:
        runs = int(runs_wanted)
        reason = {
            None: "given in the spec",
            "after": "stop after N",
            "adaptive": f"at most {runs}: stop adaptive (Mittal et al., PMBS '23) ends each configuration earlier when its samples allow",
            "kpi_width": f"at most {runs}: stop when the kpi bound is narrow enough (TriScale §7)",
        }.get(stop.kind if stop else None, f"at most {runs}: stop {stop.kind if stop else ''}")
        for need, kpi in kpi_needs:
            if runs < need:
                where = (
                    checked.spans.get("runs", span)
                    if stop is None or stop.kind != "after"
                    else span
                )
                ctx.error(
                    f"impossible design: {runs} runs are too few for kpi {kpi.metric} (percentile {kpi.percentile:g}, confidence {kpi.confidence:g}%): it needs at least {need}",
                    where,
                    f"use 'runs auto' or 'runs {need}'",
                )
    replicate = int(v.get("replicate", 1))
    if "replicate" in checked.spans:
        if stop is not None:
            ctx.error(
                "'replicate' repeats a fixed number of runs; a stop rule sets its own",
                checked.spans["replicate"],
                "remove the stop rule, or the replicate",
            )
        runs *= replicate
        reason += (
            f"; x {replicate} replicates (DataMill's replications, de Oliveira et al. ICPE 2013 §4): "
            f"{runs} rounds per series in {replicate} blocks"
        )
    series_wanted = v.get("series")
    var_needs = [(variability_sizing(x.percentile, x.confidence), x) for x in variabilities]
    if series_wanted == "auto" or (series_wanted is None and var_needs):
        if not var_needs:
            series, series_reason = 1, "auto without a variability score: one series"
        else:
            series, var = max(var_needs, key=lambda x: x[0])
            rule = (
                "the two-sided median interval at that confidence, TriScale Table 2"
                if var.percentile == 50
                else "TriScale §4.3, Eq. 4"
            )
            series_reason = f"minimal number of series for variability {var.metric} (percentile {var.percentile:g}, confidence {var.confidence:g}%) ({rule})"
    elif series_wanted is None:
        series, series_reason = 1, "default: one series"
    else:
        series, series_reason = int(series_wanted), "given in the spec"
        for need, var in var_needs:
            if series < need:
                ctx.error(
                    f"impossible design: {series} series are too few for variability {var.metric} (percentile {var.percentile:g}, confidence {var.confidence:g}%): it needs at least {need}",
                    checked.spans.get("series", span),
                    f"use 'series auto' or 'series {need}'",
                )
    if sized and method_needs:
        runs, reason = _runs_for_methods(runs, reason, series, replicate, method_needs)
    if v.get("span") == "auto" and not profiles:
        ctx.error(
            "'span auto' takes the span a profile analysis recommends, and the spec has none",
            checked.spans["span"],
            'add analysis { profile NAME from file "conditions.csv" period 1h }, or give a span',
        )
    if "span" in v and series == 1:
        ctx.warn(
            "'span' spreads series over time, but there is only one series",
            checked.spans["span"],
        )
    return model.Design(
        runs=runs,
        runs_reason=reason,
        series=series,
        series_reason=series_reason,
        order=v.get("order", "random"),
        runtime=v.get("runtime"),
        span=v.get("span"),
        replicate=replicate,
        redundancy=int(v.get("redundancy", 1)),
        warmup=int(v.get("warmup", 0)),
    )


def _runs_for_methods(
    runs: int, reason: str, series: int, replicate: int, needs: list[tuple[int, str]]
) -> tuple[int, str]:
    """Raise ``runs`` (a multiple of ``replicate``) until runs x series trials per level
    meet the most demanding comparison method."""
    need, what = max(needs)
    wanted = -(-need // series)
    wanted = -(-wanted // replicate) * replicate
    if wanted <= runs:
        return runs, reason
    because = (
        f"{what} needs at least {need} trials per level (its declared minimal sample): "
        f"{wanted} runs x {series} series"
    )
    return wanted, because + (f" (the kpi alone: {runs}, {reason})" if reason else "")


def layout_design(
    ctx: Context, ab: ABDesign, checked: s.Checked, stop: model.Stop | None, stop_span: Span | None
) -> model.Design:
    layout = ab.layout
    for key in (*NOT_WITH_LAYOUT, "replicate", "redundancy"):
        if key in checked.spans:
            ctx.error(
                f"'{key}' does not apply to a layout design",
                checked.spans[key],
                "the layout sets the trials: each request runs 'repetitions' times in its host batch",
            )
    if stop is not None:
        ctx.error(
            "a stop rule does not apply to a layout design",
            stop_span or ab.span,
            "the layout fixes every trial in advance; remove the stop rule",
        )
    return model.Design(
        runs=layout.repetitions,
        runs_reason="repetitions of each request in its host batch (layout)",
        series=1,
        series_reason="a layout runs one series",
        order="random",
        runtime=checked.values.get("runtime"),
        layout=layout,
    )


def check_ab_benchmarks(
    ctx: Context, ab: ABDesign, benchmarks: list[model.Benchmark], nodes: list[ast.Benchmark]
) -> list[model.Benchmark]:
    """A layout runs one benchmark, crossed with the versions and the requests only."""
    if len(benchmarks) > 1:
        ctx.error(
            f"a layout design runs one benchmark; this experiment has {len(benchmarks)}",
            nodes[1].span,
            "compare other benchmarks in separate experiments",
        )
    spans = {b.name: b.span for b in nodes}
    out = []
    items = {b.name: b.items for b in nodes}
    for bench in benchmarks:
        if bench.warmup is not None:
            warmup = next(i for i in items[bench.name] if getattr(i, "keyword", None) == "warmup")
            ctx.error(
                f"benchmark '{bench.name}' sets warmup, but a layout design warms up per host batch",
                warmup.span,
                "set it in the layout: layout fully_balanced { hosts 4 warmup 2 }",
            )
        others = [f for f in bench.factors if f not in (model.VERSION_FACTOR, model.REQUEST_FACTOR)]
        for name in others:
            ctx.error(
                f"benchmark '{bench.name}' uses factor '{name}', but a layout design varies only the version and the request",
                spans.get(bench.name),
                "compare versions in one experiment and vary other factors in another",
            )
        for name, what in (
            (model.VERSION_FACTOR, "both versions run the same command (an A/A test)"),
            (model.REQUEST_FACTOR, "every request runs the same command"),
        ):
            if name not in bench.factors:
                ctx.warn(
                    f"benchmark '{bench.name}' does not use {{{name}}}: {what}",
                    spans.get(bench.name),
                    f"put {{{name}}} in its run command",
                )
        out.append(attrs.evolve(bench, factors=(model.VERSION_FACTOR, model.REQUEST_FACTOR)))
    return out


def check_ab_restrictions(
    ctx: Context,
    ab: ABDesign,
    items: list[Any],
    reset: model.Reset | None,
    kpis: list[model.Kpi],
    variabilities: list[model.Variability],
    order_dependence: dict[str, Any] | None,
) -> None:
    """What a layout design cannot be combined with, and a warning for batches without a reset."""
    hint = "a layout design is analysed with: analysis { compare METRIC by version }"
    for block in (
        i for i in items if isinstance(i, ast.Block) and i.keyword in ("kpi", "variability")
    ):
        ctx.error(f"{block.keyword} does not apply to a layout design", block.span, hint)
    if order_dependence is not None:
        item = next(
            i for i in items if isinstance(i, ast.AnalysisItem) and i.keyword == "order_dependence"
        )
        ctx.error(
            "order_dependence does not apply to a layout design (it needs fixed and random rounds)",
            item.span,
            hint,
        )
    if ab.layout.kind in ("host_balanced", "fully_balanced") and reset is None:
        ctx.warn(
            f"layout {ab.layout.kind} runs two batches per host, but there is no reset: the second batch starts in the state the first left",
            ab.span,
            'reset "systemctl restart my-service" (it may use {version}) runs before every batch',
        )
