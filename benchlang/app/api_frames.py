"""The notebook's views of ``kpis()``, ``headline()`` and ``compare()`` (docs/api.md): each as a
tidy, typed pandas DataFrame (``Shown.to_frame()``: one row per observation, numbers as
floats in the metric's own unit with a ``unit`` column, text levels categorical, flags
boolean) and as HTML tables for Jupyter (``_repr_html_``), the numbers there in the metric's
one display unit (``report.table.metric_scale``), as the CLI and the report show them.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas

    from benchlang.report.analysis import ConfigurationAnalysis
    from benchlang.report.headline import MetricHeadline
    from benchlang.stats.comparison import ComparisonResult


def html_table(headers: Sequence[str], rows: Sequence[Sequence[object]], caption: str = "") -> str:
    """A plain HTML table, every cell escaped; numbers right-aligned."""
    from benchlang.report.table import format_number

    def cell(v: object) -> str:
        if isinstance(v, float | int) and not isinstance(v, bool):
            return f"<td style='text-align:right'>{html.escape(format_number(v))}</td>"
        return f"<td>{html.escape('-' if v is None else str(v))}</td>"

    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(cell(c) for c in row) + "</tr>" for row in rows)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _nan(x: float | None) -> float:
    return math.nan if x is None or not math.isfinite(x) else float(x)


def _frame(rows: list[dict[str, Any]], types: dict[str, str]) -> pandas.DataFrame:
    """``rows`` as a DataFrame with these column types (an empty result keeps its columns)."""
    import pandas as pd

    frame = pd.DataFrame(rows, columns=list(types))
    return frame.astype(types)


KPI_TYPES = {
    "metric": "category",
    "unit": "string",
    "configuration": "category",
    "series": "int64",
    "trials": "int64",
    "kpi": "float64",
    "percentile": "float64",
    "confidence": "float64",
    "bound": "category",
    "rank": "Int64",
    "achieved_confidence": "float64",
    "descriptive_only": "bool",
    "reasons": "string",
}


def kpis_frame(kpis: list[ConfigurationAnalysis], units: dict[str, str | None]) -> pandas.DataFrame:
    """One row per metric, configuration and series: the series' KPI (nan where too few
    trials converged) with its order statistic's rank and achieved confidence (TriScale §4.2)."""
    rows = [
        {
            "metric": r.metric,
            "unit": units.get(r.metric) or "",
            "configuration": r.configuration,
            "series": s.series,
            "trials": s.trials,
            "kpi": _nan(s.kpi.value) if s.kpi.enough else math.nan,
            "percentile": s.kpi.percentile,
            "confidence": s.kpi.confidence,
            "bound": s.kpi.bound,
            "rank": s.kpi.rank,
            "achieved_confidence": _nan(s.kpi.achieved_confidence),
            "descriptive_only": bool(r.analysis.descriptive_only),
            "reasons": "; ".join(r.analysis.reasons),
        }
        for r in kpis
        for s in r.analysis.series
    ]
    return _frame(rows, KPI_TYPES)


def kpis_html(kpis: list[ConfigurationAnalysis], units: dict[str, str | None]) -> str:
    """Per metric a table of every configuration's series KPIs in the display unit."""
    from benchlang.report.table import metric_scale

    out = []
    for metric in dict.fromkeys(r.metric for r in kpis):
        mine = [r for r in kpis if r.metric == metric]
        values = [s.kpi.value for r in mine for s in r.analysis.series if s.kpi.enough]
        unit, factor = metric_scale(values, units.get(metric))
        k = mine[0].kpi
        rows = []
        for r in mine:
            for s in r.analysis.series:
                value = s.kpi.value / factor if s.kpi.enough else None
                verdict = "DESCRIPTIVE ONLY" if r.analysis.descriptive_only else "yes"
                rows.append([r.configuration, s.series, s.trials, value, verdict])
        caption = (
            f"{metric}: KPI = {k.confidence:g}% {k.bound} bound on the p{k.percentile:g} "
            "per series (TriScale §4.2)"
        )
        heads = ["configuration", "series", "trials", f"KPI ({unit or '-'})", "claims hold"]
        out.append(html_table(heads, rows, caption))
        out += [
            f"<p>{html.escape(r.configuration)}: DESCRIPTIVE ONLY: "
            f"{html.escape('; '.join(r.analysis.reasons))}</p>"
            for r in mine
            if r.analysis.descriptive_only
        ]
    return "".join(out)


HEADLINE_TYPES = {
    "metric": "category",
    "unit": "string",
    "factor": "string",
    "held": "string",
    "configuration": "category",
    "name": "string",
    "place": "int64",
    "statistic": "float64",
    "percentile": "float64",
    "better": "category",
    "ratio": "float64",
    "lower": "float64",
    "upper": "float64",
    "clear": "boolean",
    "confidence": "float64",
    "comparisons": "int64",
    "descriptive_only": "bool",
}


def headline_frame(headlines: list[MetricHeadline]) -> pandas.DataFrame:
    """One row per ranking and configuration, best first: the ranking's statistic (the KPI's
    percentile, in the metric's unit), the ratio to the best and its interval, which hold
    jointly over the ranking's ``comparisons`` (``stats.headline``, ``stats.simultaneous``);
    the best has ratio 1 and no interval."""
    from benchlang.report.html.answer import group_rows

    rows = []
    for h in headlines:
        _, factor = h.display if h.display is not None else (h.unit, 1.0)
        for g in h.groups:
            rk = g.ranking
            held = ", ".join(f"{k}={v}" for k, v in g.held if k != "benchmark")
            for r in group_rows(h, g):
                rows.append(
                    {
                        "metric": h.metric,
                        "unit": h.unit or "",
                        "factor": g.factor,
                        "held": held,
                        "configuration": r["label"],
                        "name": r["name"],
                        "place": r["place"],
                        "statistic": r["statistic"] * factor,
                        "percentile": h.kpi_percentile,
                        "better": h.better,
                        "ratio": 1.0 if r["place"] == 1 else _nan(r["ratio"]),
                        "lower": _nan(r["lower"]),
                        "upper": _nan(r["upper"]),
                        "clear": r["clear"],
                        "confidence": rk.confidence,
                        "comparisons": rk.family.comparisons or len(rk.comparisons),
                        "descriptive_only": bool(rk.descriptive_only),
                    }
                )
    return _frame(rows, HEADLINE_TYPES)


def headline_html(headlines: list[MetricHeadline]) -> str:
    """The report's headline tables (``report.html.answer``)."""
    from benchlang.report.html.answer import headline_tables

    return "".join(headline_tables(headlines))


COMPARE_TYPES = {
    "metric": "category",
    "by": "category",
    "method": "category",
    "control": "string",
    "treatment": "string",
    "trials": "int64",
    "estimate": "float64",
    "scale": "string",
    "ci_low": "float64",
    "ci_high": "float64",
    "confidence": "float64",
    "p_value": "float64",
    "significant": "boolean",
    "descriptive_only": "bool",
    "problem": "string",
    "planned": "bool",
    "exploratory": "bool",
}


def _levels(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


def compare_frame(results: list[ComparisonResult], planned: bool) -> pandas.DataFrame:
    """One row per comparison: its outcome's estimate and interval (nan where it has none),
    whether it is one of the spec's ``compare`` items (``planned``, adjusted as the run's
    family) or an ad hoc one (``exploratory``: chosen after seeing the data)."""
    rows = []
    for r in results:
        o = r.outcome
        rows.append(
            {
                "metric": r.comparison.metric,
                "by": r.comparison.by,
                "method": r.comparison.method,
                "control": _levels(r.control),
                "treatment": _levels(r.treatment),
                "trials": r.trials,
                "estimate": math.nan if o is None else _nan(o.estimate),
                "scale": "" if o is None else o.scale,
                "ci_low": math.nan if o is None else _nan(o.ci_low),
                "ci_high": math.nan if o is None else _nan(o.ci_high),
                "confidence": math.nan if o is None else _nan(o.confidence),
                "p_value": math.nan if o is None or o.p_value is None else o.p_value,
                "significant": None if o is None else o.significant,
                "descriptive_only": o is None or bool(o.descriptive_only),
                "problem": r.problem or (o.descriptive_only if o is not None else None) or "",
                "planned": planned,
                "exploratory": not planned,
            }
        )
    return _frame(rows, COMPARE_TYPES)


def compare_html(results: list[ComparisonResult], planned: bool, note: str = "") -> str:
    """A row per comparison (estimate, interval, verdict), then the note on its standing."""
    rows = []
    for r in results:
        o = r.outcome
        finite = o is not None and math.isfinite(o.ci_low) and math.isfinite(o.ci_high)
        interval = (
            f"[{o.ci_low:.4g}, {o.ci_high:.4g}] ({o.confidence:g}%)"
            if o is not None and finite
            else "-"
        )
        rows.append(
            [
                r.comparison.metric,
                f"{r.comparison.by}: {_levels(r.treatment)} vs {_levels(r.control)}",
                r.comparison.method,
                None if o is None else o.estimate,
                "" if o is None else o.scale,
                interval,
                r.problem or (o.descriptive_only if o else None) or (o.verdict if o else "") or "",
                "planned (the spec's)" if planned else "EXPLORATORY (ad hoc)",
            ]
        )
    heads = ["metric", "levels", "method", "estimate", "scale", "interval", "verdict", "standing"]
    return html_table(heads, rows) + (f"<p>{html.escape(note)}</p>" if note else "")
