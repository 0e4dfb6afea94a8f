"""TriScale's figures (Jacob et al., JSys 1(1) 2021): Fig. 1b ``kpi-scatter``, 3a
``convergence``, 3b ``series-kpis``, 3c/8 ``variability``, 7 ``cdf``, 10 ``cdf-overlay``,
5 ``profile``. Numbers from ``stats.figure_triscale``; drawing here (matplotlib, lazily)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.report.figures import FigureKind, Inputs, NotApplicable, metric_view
from benchlang.report.figures.render import (
    Palette,
    dense_layer,
    legend_above,
    panel_title,
    panels,
)
from benchlang.stats import figure_triscale as ft
from benchlang.stats.figure_data import FigureData

# -- the numbers ------------------------------------------------------------------------------


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
        ft.convergence(labels, samples, results, v.metric, v.unit), inputs, v.metric, "y"
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
    return next(r.kpi.confidence for r in inputs.kpis if r.metric == metric)


def cdf_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = metric_view(inputs, metric, "cdf")
    data = ft.cdf(v.labels, v.values, _confidence(inputs, v.metric), v.metric, v.unit)
    return in_cli_units(data, inputs, v.metric, "x")


def cdf_overlay_data(inputs: Inputs, metric: str | None) -> FigureData:
    v = metric_view(inputs, metric, "cdf-overlay")
    conf = _confidence(inputs, v.metric)
    data = ft.cdf(v.labels, v.values, conf, v.metric, v.unit, overlay=True)
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


# -- the drawings -----------------------------------------------------------------------------


@attrs.frozen
class _Rows:
    """One configuration's rows as columns (``data.rows`` transposed once per figure: a
    100,000-trial CDF is 100,000 rows, which dicts per row took a fifth of a second to read)."""

    columns: dict[str, np.ndarray]
    part: np.ndarray

    def __getitem__(self, key: str) -> np.ndarray:
        return self.columns[key]

    def __iter__(self) -> Any:
        names = list(self.columns)
        for values in zip(*self.columns.values(), strict=True):
            yield dict(zip(names, values, strict=True))


def _by_label(data: FigureData) -> dict[str, _Rows]:
    """Each configuration's rows, in the order they first appear."""
    if not data.rows:
        return {}
    columns = [np.array(c, dtype=object) for c in zip(*data.rows, strict=True)]
    label = columns[data.columns.index("configuration")]
    starts = np.flatnonzero(np.r_[True, label[1:] != label[:-1]])
    runs: dict[str, list[np.ndarray]] = {}
    for a, b in zip(starts, np.r_[starts[1:], label.size], strict=True):
        runs.setdefault(label[a], []).append(np.arange(a, b))
    out: dict[str, _Rows] = {}
    for name, parts in runs.items():
        mine = np.concatenate(parts)
        picked = {c: col[mine] for c, col in zip(data.columns, columns, strict=True)}
        out[name] = _Rows(picked, picked.get("part", np.full(mine.size, None, dtype=object)))
    return out


def _xy(rows: _Rows, part: str, *keys: str) -> list[np.ndarray]:
    picked = rows.part == part
    return [rows[k][picked].astype(float) for k in keys]


def draw_kpi_scatter(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    ax = fig.subplots()
    handles = []
    for label, rows in _by_label(data).items():
        c, mk = palette.colour(label), palette.marker(label)
        sx = [r for r in rows if r["part"] != "configuration"]
        ax.scatter([r["x"] for r in sx], [r["y"] for r in sx], color=c, marker=mk, s=10, alpha=0.5)
        r = next(r for r in rows if r["part"] == "configuration")
        xerr = _err(r["x"], r["x_low"], r["x_high"])
        yerr = _err(r["y"], r["y_low"], r["y_high"])
        h = ax.errorbar(
            r["x"],
            r["y"],
            xerr=xerr,
            yerr=yerr,
            color=c,
            marker=mk,
            ms=6,
            capsize=2,
            label=label,
            linestyle="none",
        )
        handles.append(h)
    ax.set_xlabel(data.meta["x_label"])
    ax.set_ylabel(data.meta["y_label"])
    legend_above(fig, handles, paper)


def _err(centre: float, low: float, high: float) -> Any:
    if not (np.isfinite(low) and np.isfinite(high) and np.isfinite(centre)):
        return None
    return np.array([[max(0.0, centre - low)], [max(0.0, high - centre)]])


def draw_convergence(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    groups = _by_label(data)
    for ax, (label, rows) in zip(
        panels(fig, len(groups), paper, data.meta["x_label"], data.meta["y_label"]),
        groups.items(),
        strict=True,
    ):
        c = palette.colour(label)
        x, y = _xy(rows, "sample", "x", "y")
        ax.plot(x, y, color=c, alpha=0.35, lw=0.6, label="samples")
        wx, wy = _xy(rows, "window", "x", "y")
        if wx.size:
            ax.plot(
                wx, wy, color=c, lw=1.5, ls=palette.dash(label), label=data.meta["window_label"]
            )
            sx, sy = _xy(rows, "slope", "x", "y")
            ax.plot(sx, sy, color="black", lw=1.0, label="Theil–Sen slope")
            tx, lo, hi = _xy(rows, "tolerance", "x", "low", "high")
            ax.fill_between(tx, lo, hi, color="grey", alpha=0.25, label="tolerance band")
        panel_title(ax, f"{label}: {data.meta['verdicts'][label]}")
    legend_above(fig, fig.axes[0].get_legend_handles_labels()[0], paper)


def draw_series_kpis(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    """Configurations side by side on one axes (one panel per configuration costs a second of
    layout at ten): within a configuration's slot, a column per series, its trials as dots and
    its KPI as the configuration's marker."""
    ax = fig.subplots()
    groups = _by_label(data)
    n = sum(int((rows.part == "trial").sum()) for rows in groups.values())
    for i, (label, rows) in enumerate(groups.items()):
        c, mk = palette.colour(label), palette.marker(label)
        x, y = _xy(rows, "trial", "x", "y")
        kx, ky = _xy(rows, "KPI", "x", "y")
        series = np.unique(np.concatenate([x, kx]))
        slot = _slots(series)
        ax.plot(
            i + slot(x), y, ls="none", marker=".", ms=2, color=c, alpha=0.4, **dense_layer(ax, n)
        )
        ax.plot(i + slot(kx), ky, ls="none", marker=mk, ms=5, color=c, mec="black", mew=0.5)
    _configuration_ticks(ax, list(groups))
    ax.set_ylabel(data.meta["y_label"])
    ax.set_xlabel("configuration (its series left to right)")


def _slots(series: np.ndarray) -> Any:
    """Series numbers to offsets in [-0.35, 0.35] around a configuration's position."""
    if series.size < 2:
        return lambda s: np.zeros(np.size(s))
    return lambda s: np.interp(s, series, np.linspace(-0.35, 0.35, series.size))


def _configuration_ticks(ax: Any, names: list[str]) -> None:
    """Configuration names under their slots, slanted when they would touch."""
    width = ax.figure.get_size_inches()[0]
    many = len(names) > 3 or sum(map(len, names)) * 0.09 > width
    ax.set_xticks(
        range(len(names)), names, rotation=30 if many else 0, ha="right" if many else "center"
    )


def draw_variability(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    ax = fig.subplots()
    groups = _by_label(data)
    for i, (label, rows) in enumerate(groups.items()):
        c, mk = palette.colour(label), palette.marker(label)
        _, ky = _xy(rows, "series KPI", "x", "y")
        jitter = np.linspace(-0.12, 0.12, ky.size) if ky.size > 1 else np.zeros(ky.size)
        ax.scatter(i + jitter, ky, color=c, marker=mk, s=14, zorder=3)
        _, lo, hi = _xy(rows, "variability", "x", "low", "high")
        for low, high in zip(lo, hi, strict=True):
            ax.vlines(i + 0.25, low, high, color=c, lw=2, ls=palette.dash(label))
            ax.hlines([low, high], i + 0.18, i + 0.32, color=c, lw=1.5)
    _configuration_ticks(ax, list(groups))
    ax.set_ylabel(data.meta["y_label"])


def _panel_label(ax: Any, text: str) -> None:
    """A panel's name inside its top left corner: a title would be placed anew at every
    layout pass (a fifth of a ten-panel figure's drawing time)."""
    ax.text(0.03, 0.97, text, transform=ax.transAxes, ha="left", va="top", fontsize="small")


def draw_cdf(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    groups = _by_label(data)
    for ax, (label, rows) in zip(
        panels(fig, len(groups), paper, data.meta["x_label"], data.meta["y_label"], sharey=True),
        groups.items(),
        strict=True,
    ):
        c = palette.colour(label)
        x, p = _xy(rows, "trial", "x", "y")
        ax.step(x, p, where="post", color=c, lw=1.2, ls=palette.dash(label), label="empirical CDF")
        _, q, lo, hi = _xy(rows, "band", "x", "y", "low", "high")
        ax.fill_betweenx(q, lo, hi, color=c, alpha=0.25, step="post", label="confidence band")
        _panel_label(ax, label)
    if groups:
        fig.axes[0].set_yticks([0.0, 0.5, 1.0])  # one y axis, shared by the panels


def draw_cdf_overlay(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    ax = fig.subplots()
    handles = []
    for label, rows in _by_label(data).items():
        c, ls = palette.colour(label), palette.dash(label)
        _, q, lo, hi = _xy(rows, "band", "x", "y", "low", "high")
        ax.fill_betweenx(q, lo, hi, color=c, alpha=0.2, step="post")
        ax.step(lo, q, where="post", color=c, ls=ls, lw=1)
        (h,) = ax.step(
            hi,
            q,
            where="post",
            color=c,
            ls=ls,
            lw=1,
            label=label,
            marker=palette.marker(label),
            markevery=max(1, q.size // 4),
            ms=4,
        )
        handles.append(h)
    ax.set_xlabel(data.meta["x_label"])
    ax.set_ylabel(data.meta["y_label"])
    legend_above(fig, handles, paper)


def draw_profile(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    ax = fig.subplots()
    rows = data.where()
    lag = np.array([r["lag"] for r in rows], dtype=float)
    acf = np.array([r["acf"] for r in rows], dtype=float)
    thr = np.array([r["threshold"] for r in rows], dtype=float)
    text = {r["lag"]: r["lag_text"] for r in rows}
    ax.vlines(lag, 0, acf, color="#0072B2", lw=0.8)
    ax.plot(lag, thr, color="grey", ls="--", lw=0.8, label="significance band")
    ax.plot(lag, -thr, color="grey", ls="--", lw=0.8)
    peaks = [r for r in rows if r["peak"]]
    ax.plot(
        [r["lag"] for r in peaks], [r["acf"] for r in peaks], "v", color="#D55E00", label="peak"
    )
    for r in rows:
        if r["period"]:
            ax.axvline(r["lag"], color="#009E73", lw=1)
            ax.annotate(
                f"period {r['lag_text']}",
                (r["lag"], 0.95),
                xycoords=("data", "axes fraction"),
                fontsize="x-small",
                ha="left",
            )
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(8, integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: text.get(int(v), "")))
    ax.set_xlabel(data.meta["x_label"])
    ax.set_ylabel(data.meta["y_label"])
    legend_above(fig, ax.get_legend_handles_labels()[0], paper)


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
