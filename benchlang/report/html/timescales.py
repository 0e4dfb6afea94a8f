"""TriScale's three timescales per metric and configuration (Jacob et al., JSys 1(1) 2021,
Fig. 3): a trial's raw series with the convergence test (§4.1: the metric over sliding windows,
the Theil-Sen slope and the ±tolerance band), the KPI of each series with its order-statistic
bound (§4.2), the variability score over the series (§4.3), and the CDF of the metric with its
confidence band (the KPI's binomial rule at every percentile, ``stats.cdf``).

Every number comes from the analysis already run (``report.analysis.analyze``) or from the
stats functions the analysis uses; this module only draws them.
"""

from __future__ import annotations

import math

import numpy as np

from benchlang.report.html import plots
from benchlang.report.html.inputs import ReportInputs
from benchlang.report.html.page import esc, figure, section, warning

MAX_CONFIGURATIONS = 12
"""Configurations drawn per metric; the rest are in the summary's tables (the page says so)."""
MAX_SERIES = 20
BAND_WORK = 200_000
"""Percentiles x values the CDF band evaluates (its cost); beyond it the band is computed at
every k-th percentile, and the plot says so."""


def timescales_section(inputs: ReportInputs) -> str | None:
    if not inputs.kpis:
        return None
    data = inputs.data
    index_of = {label: index for index, label, _b, _l in data.configurations()}
    body = []
    by_metric: dict[str, list] = {}
    for r in inputs.kpis:
        by_metric.setdefault(r.metric, []).append(r)
    for metric, results in by_metric.items():
        shown = results[:MAX_CONFIGURATIONS]
        if len(results) > len(shown):
            body.append(
                f"<p class='note'>{metric}: the first {len(shown)} of {len(results)} "
                "configurations are drawn; every configuration is in the summary's tables.</p>"
            )
        for r in shown:
            body.append(_configuration(inputs, r, index_of[r.configuration]))
    return section("timescales", "Timescales per metric and configuration (TriScale)", body)


def _configuration(inputs: ReportInputs, r, index: int) -> str:
    data = inputs.data
    unit = data.experiment.metric(r.metric).unit or ""
    t = data.table
    mask = (t.configuration == index) & t.ok
    values = data.metrics[r.metric].values[mask]
    series = t.series[mask]
    parts = [f"<h3>{esc(r.configuration)} / {esc(r.metric)}</h3>"]
    if r.analysis.descriptive_only:
        parts.append(warning("DESCRIPTIVE ONLY: " + "; ".join(r.analysis.reasons)))
    raw = inputs.raw.get((r.metric, index))
    figures = []
    if raw is not None:
        figures.append(_raw_series(inputs, r.metric, r.configuration, *raw, unit))
    figures.append(_kpis(r, values, series, unit))
    if r.analysis.variability is not None:
        figures.append(_variability(r, unit))
    figures.append(_cdf(r, values, unit))
    return "".join(parts) + "<div class='grid'>" + "".join(figures) + "</div>"


def _raw_series(inputs: ReportInputs, metric: str, label: str, trial: int, x, unit: str) -> str:
    from benchlang.run.trial_metric import series_metric
    from benchlang.stats.figure_triscale import convergence_lines

    m = inputs.data.experiment.metric(metric)
    result = series_metric(m, x, inputs.data.experiment.design.runtime)
    samples = np.asarray(x, dtype=float)
    samples = samples[np.isfinite(samples)]
    keep, note = plots.thin(samples.size)
    curves = [("samples", keep.astype(float), samples[keep])]
    rows = [[int(i), float(samples[i])] for i in keep]
    alt = f"Raw series of trial {trial} ({label}): {samples.size} samples of {metric}"
    lines = convergence_lines(samples, result)
    if lines is not None:
        w = lines.window_length
        curves.append(
            (f"{_measure(m.aggregate)} over windows of {w:,} samples", lines.centres, lines.values)
        )
        curves.append(("Theil-Sen slope", lines.slope_x, lines.slope_y))
        tol = (result.tolerance or 0.0) / 100.0
        band = (f"±{result.tolerance:g}% tolerance", lines.band_x, lines.band_low, lines.band_high)
        verdict = "converged" if result.converged else "did NOT converge"
        alt += (
            f"; {verdict}: slope CI [{result.slope_ci[0]:.3g}, {result.slope_ci[1]:.3g}] "
            f"against ±{tol:.3g} (scaled units, TriScale §4.1); metric {result.value:.4g} {unit}"
        )
        svg = plots.lines(
            curves,
            f"trial {trial}: raw series",
            "sample",
            f"{metric} ({unit})",
            bands=[band],
            note=note,
        )
    else:
        alt += f"; metric {result.value:.4g} {unit} (no convergence test in the spec)"
        svg = plots.lines(
            curves, f"trial {trial}: raw series", "sample", f"{metric} ({unit})", note=note
        )
    if result.trimmed:
        alt += f"; the first {result.trimmed} samples are trimmed"
    return figure(svg, alt, ["sample", "value"], rows, note=note)


def _measure(aggregate: str | float) -> str:
    """The metric's measure as the spec writes it: "mean", "p95" (not "95.0")."""
    return aggregate if isinstance(aggregate, str) else f"p{aggregate:g}"


def _kpis(r, values: np.ndarray, series: np.ndarray, unit: str) -> str:
    kpis = r.analysis.series
    chosen = kpis
    note = None
    if len(kpis) > MAX_SERIES:
        picked, _ = plots.thin(len(kpis), MAX_SERIES)
        chosen = tuple(kpis[i] for i in picked)
        note = f"{len(chosen)} of {len(kpis)} series shown, evenly spaced"
    per = max(1, plots.MAX_POINTS // max(1, len(chosen)))
    groups, marks, rows = [], [], []
    thinned = False
    for g, s in enumerate(chosen):
        v = values[(series == s.series) & np.isfinite(values)]
        keep, cut = plots.thin(v.size, per)
        thinned |= cut is not None
        groups.append((f"s{s.series}", v[keep]))
        k = s.kpi
        if k.enough and math.isfinite(k.value):
            marks.append((g, k.value, f"KPI: p{k.percentile:g} {k.bound} bound"))
        rows.append(
            [
                s.series,
                s.trials,
                k.value if k.enough else None,
                k.rank,
                k.achieved_confidence,
                "pass" if k.independent else "flag",
            ]
        )
    if thinned:
        note = ((note + "; ") if note else "") + f"at most {per} values drawn per series"
    k0 = kpis[0].kpi if kpis else None
    what = f"p{k0.percentile:g} {k0.bound} bound at {k0.confidence:g}%" if k0 else "KPI"
    alt = f"{r.metric} per trial in each of {len(kpis)} series with each series' KPI ({what})"
    svg = plots.points(
        groups, f"KPI per series ({what})", f"{r.metric} ({unit})", marks=marks, note=note
    )
    headers = ["series", "trials", "KPI", "rank", "achieved confidence %", "per-series test"]
    return figure(svg, alt, headers, rows, note=note)


def _variability(r, unit: str) -> str:
    v = r.analysis.variability
    kpis = [s.kpi.value for s in r.analysis.series]
    order = np.argsort(kpis)
    sorted_kpis = np.asarray(kpis, dtype=float)[order]
    hlines = []
    if v.enough:
        hlines = [
            (f"lower p{v.percentile_low:g}", v.lower),
            (f"upper p{v.percentile_high:g}", v.upper),
        ]
        alt = (
            f"Variability score of {r.metric} over {v.n} series: {v.score:.4g} {unit} "
            f"({100 * v.relative:.3g}% relative), joint confidence {v.joint_confidence:.4g}%"
        )
    else:
        alt = f"Variability score of {r.metric}: needs {v.min_n} series, {v.n} ran"
    svg = plots.lines(
        [("series KPI (sorted)", np.arange(1, len(kpis) + 1.0), sorted_kpis)],
        "variability score across series",
        "series, by KPI",
        f"{r.metric} ({unit})",
        hlines=hlines,
        markers=True,
    )
    rows = [[r.analysis.series[i].series, kpis[i]] for i in order.tolist()]
    return figure(svg, alt, ["series", "KPI"], rows)


def _cdf(r, values: np.ndarray, unit: str) -> str:
    from benchlang.stats.cdf import cdf_band

    x = np.sort(values[np.isfinite(values)])
    if x.size == 0:
        return warning(f"{r.metric}: no finite value to draw")
    step = max(1, math.ceil(97 * x.size / BAND_WORK))
    band = cdf_band(x, np.arange(2.0, 99.0, step), confidence=r.kpi.confidence)
    keep, note = plots.thin(x.size)
    if step > 1:
        note = ((note + "; ") if note else "") + f"band at every {step}th percentile"
    p = (np.arange(1, x.size + 1) / x.size)[keep]
    finite = np.isfinite(band.lower) & np.isfinite(band.upper)
    bands = []
    if finite.any():
        bands = [
            (
                f"{band.confidence:g}% band",
                band.percentiles[finite] / 100.0,
                band.lower[finite],
                band.upper[finite],
            )
        ]
    svg = plots.lines(
        [("empirical CDF", x[keep], p)],
        "CDF with confidence band",
        f"{r.metric} ({unit})",
        "fraction of trials",
        bands=bands,
        step=True,
        horizontal=True,
        note=note,
    )
    alt = (
        f"CDF of {r.metric} over {x.size} trials with the {band.confidence:g}% confidence band "
        f"of each percentile ({int(finite.sum())} of {band.percentiles.size} percentiles bounded)"
    )
    rows = [
        [float(q), lo if np.isfinite(lo) else None, hi if np.isfinite(hi) else None]
        for q, lo, hi in zip(band.percentiles, band.lower, band.upper, strict=True)
    ]
    return figure(svg, alt, ["percentile", "lower bound", "upper bound"], rows, note=note)
