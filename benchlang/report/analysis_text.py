"""The default analysis as text (``benchlang analyze``): the KPI and variability tables in
one display unit per metric, and the independence notes, per-series and run-level
(``report.analysis`` computes what they show)."""

from __future__ import annotations

import math
from typing import Any, TextIO

from benchlang.report.analysis import ConfigurationAnalysis, finite_or_none
from benchlang.report.table import metric_scale, render_table
from benchlang.stats.run_independence import RUN_ALPHA, per_series_note


def _kpi_confidence_cell(k: Any) -> str:
    """Thompson's rank (two-sided: both ranks) and exact confidence, or the other method's
    interval and level."""
    if getattr(k, "ranks", None) is not None:
        return f"x({k.ranks[0]})..x({k.ranks[1]}) {k.achieved_confidence:.3g}%"
    if k.rank is not None:
        return f"x({k.rank}) {k.achieved_confidence:.3g}%"
    return f"{k.details.get('answered_by', k.details.get('interval', k.method))} {k.confidence:g}%"


def _kpi_value_cell(k: Any, unit: str | None, scale: tuple) -> str:
    """The bound, or with ``bound both`` the interval [lower, upper]."""
    from benchlang.report.table import format_quantity

    if k.bound == "both" and k.enough:
        lower, upper = (format_quantity(x, unit, scale=scale) for x in (k.lower, k.upper))
        return f"[{lower}, {upper}]"
    return format_quantity(finite_or_none(k.value), unit, scale=scale)


def _kpi_title(results: list[ConfigurationAnalysis]) -> str:
    """The table's title names the KPI methods with their settings (beyond Thompson's)."""
    from benchlang.stats.registry import kpi_method_text

    others = sorted({kpi_method_text(r.kpi) for r in results if r.kpi.method != "thompson"})
    if not others:
        return "KPIs (TriScale §4.2, Thompson order statistics)"
    return f"KPIs (TriScale §4.2; {', '.join(others)})"


def render_analysis(
    results: list[ConfigurationAnalysis],
    units: dict[str, str | None],
    stream: TextIO | None = None,
    scales: dict[str, tuple[str | None, float]] | None = None,
) -> None:
    """The KPI and variability tables and the independence notes. ``scales``: each metric's
    one display unit (the headline's, ``metric_scale`` of the store's trials); a metric not
    in it gets ``metric_scale`` of its KPIs, so a table never mixes units of one metric."""
    if not results:
        return
    from benchlang.report.table import format_quantity

    scales = dict(scales or {})
    for metric in dict.fromkeys(r.metric for r in results):
        if metric not in scales:
            kpis = [s.kpi.value for r in results if r.metric == metric for s in r.analysis.series]
            scales[metric] = metric_scale(
                [finite_or_none(v) for v in kpis if finite_or_none(v) is not None] or [0.0],
                units.get(metric),
            )
    rows = []
    for r in results:
        unit, scale = units.get(r.metric), scales[r.metric]
        for s in r.analysis.series:
            k = s.kpi
            rows.append(
                [
                    r.configuration,
                    r.metric,
                    r.series_label(s.series),
                    s.trials,
                    f"p{k.percentile:g} {k.bound}" if k.enough else f"needs n>={k.min_n}",
                    _kpi_value_cell(k, unit, scale),
                    _kpi_confidence_cell(k) if k.enough else "-",
                    _per_series_cell(k.independence),
                ]
            )
    render_table(
        [
            "configuration",
            "metric",
            "series",
            "n",
            "KPI",
            "value",
            "confidence",
            "per-series test (trend p, LB p)",
        ],
        rows,
        title=_kpi_title(results),
        stream=stream,
        align=["left", "left", "right", "right", "left", "right", "right", "left"],
    )
    var_rows = []
    for r in results:
        v = r.analysis.variability
        if v is None:
            continue
        unit, scale = units.get(r.metric), scales[r.metric]

        def shown(x: float | None, unit: str | None = unit, scale: tuple = scale) -> str:
            return format_quantity(finite_or_none(x), unit, scale=scale)

        var_rows.append(
            [
                r.configuration,
                r.metric,
                v.n,
                shown(v.lower) if v.enough else f"needs {v.min_n} series",
                shown(v.upper) if v.enough else "-",
                shown(v.score) if v.enough else "-",
                f"{100 * v.relative:.3g}%" if v.enough and math.isfinite(v.relative) else "-",
                f"{v.joint_confidence:.4g}%" + (" (exact)" if v.joint_exact else ""),
                _per_series_cell(v.independence),
            ]
        )
    if var_rows:
        render_table(
            [
                "configuration",
                "metric",
                "series",
                "lower",
                "upper",
                "score",
                "relative",
                "joint",
                "KPIs' test (trend p, LB p)",
            ],
            var_rows,
            title="variability scores (TriScale §4.3)",
            stream=stream,
            align=["left", "left", "right", "right", "right", "right", "right", "right", "left"],
        )
    import sys

    from benchlang.report.table import write_wrapped

    out = stream or sys.stdout
    notes = independence_lines(results)
    fallbacks = {
        note
        for r in results
        for s in r.analysis.series
        if (note := s.kpi.details.get("note")) is not None
    }
    notes.extend(f"note: {n}" for n in sorted(fallbacks))
    for r in results:
        mine = r.analysis.configuration_reasons
        if mine:
            notes.append(f"{r.configuration} / {r.metric}: DESCRIPTIVE ONLY: " + "; ".join(mine))
    write_wrapped(notes, out)


def _per_series_cell(test) -> str:
    """TriScale's per-series test as shown (not a verdict unless asked for): its p-values."""
    if test.n < 4:
        return "too few"
    word = "pass" if test.passed else "flag"
    return f"{word} ({test.trend_p:.2g}, {test.ljung_box_p:.2g})"


def independence_lines(results: list[ConfigurationAnalysis]) -> list[str]:
    """Per metric: the per-series tests counted against chance, then the run-level verdict
    ("independence (run-level, 2 tests, Holm at 5% (first step 2.5%)): passed (...)")."""
    lines = []
    for metric in dict.fromkeys(r.metric for r in results):
        mine = [r for r in results if r.metric == metric]
        flagged = tested = 0
        for r in mine:
            f, t = r.analysis.per_series_flags()
            flagged, tested = flagged + f, tested + t
        if tested:
            decides = mine[0].analysis.per_series_decides
            what = "each decides, on request" if decides else "shown, not a verdict"
            lines.append(
                f"{metric}: TriScale's per-series tests (§4.5, {what}): "
                + per_series_note(flagged, tested, RUN_ALPHA)
            )
        verdict = mine[0].analysis.independence
        if verdict is not None:
            head = "" if verdict.passed else "DESCRIPTIVE ONLY: "
            lines.append(f"{metric}: {head}{verdict.summary()}")
    return lines


def render_population(
    population: Any, units: dict[str, str | None], out: TextIO | None = None
) -> None:
    """The KPIs generalised over a population factor's inputs (report.population): one
    line per metric and cell, then the other factors' levels compared over the inputs."""
    import sys

    out = out or sys.stdout
    if not population.results:
        return
    first = population.results[0]
    print(
        f"\nKPIs over the population of {first.factor} (TriScale §5.3; each input's KPI: "
        f"{first.per_input}):",
        file=out,
    )
    for r in population.results:
        print(f"  {r.line(units.get(r.metric))}", file=out)
    for c in population.contrasts:
        print(f"  {c.line(units.get(c.metric))}", file=out)
