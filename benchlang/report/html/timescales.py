"""TriScale's three timescales per metric and configuration (Jacob et al., JSys 1(1) 2021,
Fig. 3) as tables: the convergence of the trials (§4.1), the KPI of each series with its
order-statistic bound (§4.2) and the variability score over the series (§4.3), with what made
a configuration descriptive only.

The plots of these numbers are the papers' figures (``report.figures``: ``convergence``,
``series-kpis``, ``variability``, ``cdf``, ``cdf-overlay``), drawn once, in the figures
section, by the one drawing path ``benchlang figure`` exports (docs/report.md says why).
"""

from __future__ import annotations

import numpy as np

from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import esc, section, table, warning


def timescales_section(inputs: ReportInputs) -> str | None:
    if not inputs.kpis:
        return None
    by_metric: dict[str, list] = {}
    for r in inputs.kpis:
        by_metric.setdefault(r.metric, []).append(r)
    body = []
    for metric, results in by_metric.items():
        body += _metric(inputs, metric, results)
    return section("timescales", "Timescales per metric and configuration (TriScale)", body)


def _figures(inputs: ReportInputs, metric: str, results: list) -> str:
    """Links to the figures that draw this metric's numbers."""
    names = ["series-kpis"]
    if any(key[0] == metric for key in inputs.raw):
        names.insert(0, "convergence")
    if any(r.analysis.variability is not None for r in results):
        names.append("variability")
    names += ["cdf", "cdf-overlay"]
    links = ", ".join(f"<a href='#fig-{n}'>{n}</a>" for n in names)
    first = inputs.kpis[0].metric
    if metric == first:
        return f"<p class='note'>Drawn in the figures above: {links}.</p>"
    return (
        f"<p class='note'>The figures above draw {esc(first)} ({links}); <code>benchlang "
        f"figure STORE NAME --metric {esc(metric)}</code> draws {esc(metric)}.</p>"
    )


def _metric(inputs: ReportInputs, metric: str, results: list) -> list[str]:
    unit, factor = inputs.scale(metric)
    unit = unit or ""
    k0 = next((s.kpi for r in results for s in r.analysis.series), None)
    what = f"p{k0.percentile:g} {k0.bound} bound at {k0.confidence:g}%" if k0 else "KPI"
    rows = []
    for r in results:
        a = r.analysis
        kpis = np.array([s.kpi.value for s in a.series if s.kpi.enough], dtype=float)
        v = a.variability
        rows.append(
            [
                r.configuration,
                sum(s.trials for s in a.series),
                sum(s.not_converged for s in a.series),
                len(a.series),
                len(kpis),
                float(kpis.min()) / factor if kpis.size else None,
                float(kpis.max()) / factor if kpis.size else None,
                float(v.score) / factor if v is not None and v.enough else None,
                f"[{v.lower / factor:.4g}, {v.upper / factor:.4g}]"
                if v is not None and v.enough
                else "-",
                "DESCRIPTIVE ONLY" if a.descriptive_only else "yes",
            ]
        )
    headers = [
        "configuration",
        "trials",
        "not converged",
        "series",
        "series with a KPI",
        f"lowest KPI ({unit})",
        f"highest KPI ({unit})",
        f"variability score ({unit})",
        "variability interval",
        "claims hold",
    ]
    out = [f"<h3>{esc(metric)}: KPI = {esc(what)} per series</h3>"]
    out.append(_figures(inputs, metric, results))
    out.append(
        table(
            headers,
            rows,
            caption=f"{metric}: trials, convergence (§4.1), series KPIs (§4.2) and variability "
            "(§4.3) per configuration",
            bad={i: "bad" for i, r in enumerate(results) if r.analysis.descriptive_only},
        )
    )
    for r in results:
        if r.analysis.descriptive_only:
            out.append(
                warning(f"{r.configuration}: DESCRIPTIVE ONLY: " + "; ".join(r.analysis.reasons))
            )
    out.append(_series_table(results, unit, factor))
    return out


def _series_table(results: list, unit: str, factor: float) -> str:
    """Every series' KPI, its rank and achieved confidence, as the data behind the figures."""
    rows = [
        [
            r.configuration,
            s.series,
            s.trials,
            s.kpi.value / factor if s.kpi.enough else None,
            s.kpi.rank,
            s.kpi.achieved_confidence,
            "pass" if s.kpi.independent else "flag",
        ]
        for r in results
        for s in r.analysis.series
    ]
    headers = [
        "configuration",
        "series",
        "trials",
        f"KPI ({unit})" if unit else "KPI",
        "rank",
        "achieved confidence %",
        "per-series test",
    ]
    return (
        f"<details><summary>KPI of every series ({len(rows):,} rows)</summary>"
        f"{table(headers, rows)}</details>"
    )
