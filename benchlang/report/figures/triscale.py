"""TriScale's figures (Jacob et al., JSys 1(1) 2021): Fig. 1b ``kpi-scatter``, 3a
``convergence``, 3b ``series-kpis``, 4 ``runtimes``, 3c/8 ``variability``, 7 ``cdf``, 10
``cdf-overlay``, 5 ``profile``. Numbers from ``stats.figure_triscale``,
``stats.figure_convergence`` and ``stats.figure_cdf``; drawings in ``triscale_draw``
(matplotlib, lazily)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.report.figures import FigureKind, Inputs, NotApplicable, metric_view, shared
from benchlang.report.figures.triscale_draw import (
    draw_cdf,
    draw_cdf_overlay,
    draw_convergence,
    draw_kpi_scatter,
    draw_profile,
    draw_runtimes,
    draw_series_kpis,
    draw_variability,
)
from benchlang.stats import figure_cdf as fc
from benchlang.stats import figure_convergence as fv
from benchlang.stats import figure_triscale as ft
from benchlang.stats.figure_data import FigureData


def in_cli_units(data: FigureData, inputs: Inputs, metric: str, axis: str) -> FigureData:
    """The figure's ``axis`` ("x" or "y") in the unit the CLI prints the metric in
    (``report.table.metric_scale`` of all its successful trials: ms for 0.0468 s): its label
    names the unit and ``meta[axis + "_scale"]`` is the divisor the drawing applies to the
    ticks; the rows, ``--data`` and ``--json`` keep the metric's own unit."""
    from benchlang.report.table import metric_scale

    d = inputs.data
    unit = d.experiment.metric(metric).unit or ""
    shown, factor = metric_scale(d.metrics[metric].values[d.table.ok], unit)
    if not shown or factor == 1.0:
        return data
    key = f"{axis}_label"
    label = str(data.meta[key]).replace(f"({unit})", f"({shown})")
    return attrs.evolve(data, meta={**data.meta, key: label, f"{axis}_scale": factor})


def kpi_scatter_data(inputs: Inputs, metric: str | None) -> FigureData:
    x = metric_view(inputs, metric, "kpi-scatter")
    others = [r.metric for r in inputs.kpis if r.metric != x.metric]
    if not others:
        raise NotApplicable(
            f"kpi-scatter plots the KPI of one metric against another; only {x.metric} has a KPI",
            hint="give a second metric a `kpi` in the spec",
        )
    y = metric_view(inputs, others[0], "kpi-scatter")
    both = [label for label in x.labels if label in y.labels]
    ax = [x.analyses[x.labels.index(label)] for label in both]
    ay = [y.analyses[y.labels.index(label)] for label in both]
    data = ft.kpi_scatter(both, ax, ay, (x.metric, y.metric), (x.unit, y.unit))
    return in_cli_units(in_cli_units(data, inputs, x.metric, "x"), inputs, y.metric, "y")


def convergence_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.run.trial_metric import series_metric

    v = metric_view(inputs, metric, "convergence")
    m = inputs.data.experiment.metric(v.metric)
    runtime = inputs.data.experiment.design.runtime
    labels, samples, results = [], [], []
    for label, index in zip(v.labels, v.indices, strict=True):
        raw = inputs.raw.get((v.metric, index))
        if raw is not None:
            labels.append(label)
            samples.append(np.asarray(raw[1], dtype=float))
            results.append(series_metric(m, raw[1], runtime))
    if not labels:
        raise NotApplicable(
            f"convergence draws a trial's raw series; {v.metric} is one number per trial",
            hint="measure a series (`measure NAME series from file ...`) to test convergence",
        )
    data = in_cli_units(
        fv.convergence(labels, samples, results, v.metric, v.unit), inputs, v.metric, "y"
    )
    missing = [label for label in v.labels if label not in labels]
    if missing:
        note = f"no raw series stored for {', '.join(missing)}"
        return attrs.evolve(data, notes=(*data.notes, note))
    return data


def series_kpis_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = metric_view(inputs, metric, "series-kpis")
    data = ft.series_kpis(v.labels, v.values, v.series, v.analyses, v.metric, v.unit)
    return in_cli_units(data, inputs, v.metric, "y")


def runtimes_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.run.trial_metric import series_metric

    exp = inputs.data.experiment
    factor = next((f for f in exp.factors if f.name == "runtime"), None)
    if factor is None:
        raise NotApplicable(
            "runtimes compares one protocol run at several runtimes, and the spec declares "
            "one runtime",
            hint="factor runtime in [30s, 60s] with a series metric and a convergence test",
        )
    v = metric_view(inputs, metric, "runtimes", analysed=False)
    m = exp.metric(v.metric)
    t = inputs.data.table
    levels = {index: lv.get("runtime") for index, _l, _b, lv in inputs.data.configurations()}
    converged_mask = inputs.data.metrics[v.metric].converged
    labels, samples, results = [], [], []
    seconds, lengths, converged = {}, {}, {}
    for label, index in zip(v.labels, v.indices, strict=True):
        raw = inputs.raw.get((v.metric, index))
        if raw is None or levels.get(index) is None:
            continue
        x = np.asarray(raw[1], dtype=float)
        labels.append(label)
        samples.append(x)
        results.append(series_metric(m, raw[1], float(levels[index])))
        seconds[label], lengths[label] = float(levels[index]), int(x.size)
        mask = (np.asarray(t.configuration) == index) & np.asarray(t.ok)
        done = 0 if converged_mask is None else int(np.sum(converged_mask[mask]))
        converged[label] = (done, int(mask.sum()))
    if not labels:
        raise NotApplicable(
            f"runtimes draws a run's raw series at each runtime; {v.metric} is one number per "
            "trial",
            hint="measure a series (`measure NAME series from file ...`) to test convergence",
        )
    conv = fv.convergence(labels, samples, results, v.metric, v.unit)
    data = ft.runtimes(conv, seconds, lengths, converged)
    return in_cli_units(data, inputs, v.metric, "y")


def variability_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = metric_view(inputs, metric, "variability")
    if all(a.variability is None for a in v.analyses):
        raise NotApplicable(
            f"variability draws TriScale's variability score and the spec asks none of {v.metric}",
            hint=f"add `variability {v.metric} {{ percentile 25 confidence 75% }}` and series",
        )
    return in_cli_units(
        ft.variability(v.labels, v.analyses, v.metric, v.unit), inputs, v.metric, "y"
    )


def _confidence(inputs: Inputs, metric: str) -> float:
    """The confidence of ``metric``'s KPI, as the spec declares it."""
    return next(k.confidence for k in inputs.data.experiment.kpis if k.metric == metric)


def _cdf_parts(inputs: Inputs, metric: str | None, figure: str) -> tuple[Any, float, Any]:
    """The metric's view, KPI confidence and CDF parts, built once for ``cdf`` and
    ``cdf-overlay``."""
    v = metric_view(inputs, metric, figure, analysed=False)
    conf = _confidence(inputs, v.metric)
    parts = shared(inputs, ("cdf", v.metric), lambda: fc.cdf_parts(v.labels, v.values, conf))
    return v, conf, parts


def cdf_data(inputs: Inputs, metric: str | None) -> FigureData:
    v, conf, parts = _cdf_parts(inputs, metric, "cdf")
    return in_cli_units(fc.cdf(parts, conf, v.metric, v.unit), inputs, v.metric, "x")


def cdf_overlay_data(inputs: Inputs, metric: str | None) -> FigureData:
    v, conf, parts = _cdf_parts(inputs, metric, "cdf-overlay")
    data = fc.cdf(parts, conf, v.metric, v.unit, overlay=True)
    return in_cli_units(data, inputs, v.metric, "x")


def profile_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.report.record import format_duration

    done = [p for p in inputs.profiles if p.result is not None]
    if not done:
        why = "; ".join(f"{p.name}: {p.problem}" for p in inputs.profiles if p.problem)
        raise NotApplicable(
            "profile draws the autocorrelation of condition data and "
            + (f"no profile could be computed ({why})" if why else "the spec has no `profile`"),
            hint='add `profile NAME { data "FILE.csv" period 1h }` to the spec',
        )
    chosen = next((p for p in done if p.name == metric), done[0]) if metric else done[0]
    if metric and chosen.name != metric:
        raise NotApplicable(
            f"no profile named {metric!r}", hint="profiles: " + ", ".join(p.name for p in done)
        )
    result = chosen.result
    lags = [format_duration(lag * result.period) for lag in range(result.acf.size)]
    data = ft.profile(chosen.name, result, lags)
    others = [p.name for p in done if p is not chosen]
    if others:
        note = f"profiles not drawn: {', '.join(others)} (--metric NAME draws one)"
        return attrs.evolve(data, notes=(*data.notes, note))
    return data


FIGURES = (
    FigureKind(
        "kpi-scatter",
        "KPI of one metric against another, per configuration (TriScale Fig. 1b)",
        kpi_scatter_data,
        draw_kpi_scatter,
    ),
    FigureKind(
        "convergence",
        "raw series, windowed metric, Theil–Sen slope and tolerance (TriScale Fig. 3a)",
        convergence_data,
        draw_convergence,
    ),
    FigureKind(
        "series-kpis",
        "every trial and each series' KPI (TriScale Fig. 3b)",
        series_kpis_data,
        draw_series_kpis,
    ),
    FigureKind(
        "runtimes",
        "one run's raw series at each runtime with its convergence test, side by side "
        "(TriScale Fig. 4)",
        runtimes_data,
        draw_runtimes,
    ),
    FigureKind(
        "variability",
        "series KPIs and variability intervals side by side (TriScale Figs. 3c, 8)",
        variability_data,
        draw_variability,
    ),
    FigureKind(
        "cdf",
        "empirical CDF with its confidence band, per configuration (TriScale Fig. 7)",
        cdf_data,
        draw_cdf,
    ),
    FigureKind(
        "cdf-overlay",
        "CDF confidence bands of all configurations overlaid (TriScale Fig. 10)",
        cdf_overlay_data,
        draw_cdf_overlay,
    ),
    FigureKind(
        "profile",
        "autocorrelation of condition data, seasonal periods (TriScale Fig. 5)",
        profile_data,
        draw_profile,
    ),
)
