"""The drawings of TriScale's figures (Jacob et al., JSys 1(1) 2021; docs/figures.md): Fig. 1b
``kpi-scatter``, 3a ``convergence``, 3b ``series-kpis``, 4 ``runtimes``, 3c/8
``variability``, 7 ``cdf``, 10
``cdf-overlay``, 5 ``profile``. Their numbers are built in ``report.figures.triscale``."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.report.figures.render import (
    Palette,
    dense_layer,
    legend_above,
    marked_x,
    panel_title,
    panels,
)
from benchlang.stats.figure_data import FigureData


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
        for r in sx:
            xerr = _err(r["x"], r["x_low"], r["x_high"])
            yerr = _err(r["y"], r["y_low"], r["y_high"])
            if xerr is not None or yerr is not None:
                ax.errorbar(
                    r["x"], r["y"], xerr=xerr, yerr=yerr, color=c, lw=0.6, alpha=0.5, ls="none"
                )
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
        view = data.meta.get("y_view", {}).get(label)
        if view is not None:
            low, high = view
            _far_marks(ax, x, y, low, high, c)
        panel_title(ax, f"{label}\n{data.meta['verdicts'][label]}")  # narrow panels
    legend_above(fig, fig.axes[0].get_legend_handles_labels()[0], paper)


def _far_marks(ax: Any, x: np.ndarray, y: np.ndarray, low: float, high: float, c: Any) -> None:
    """The panel cut to [low, high] (``stats.figure_convergence.far_outside``), each sample
    beyond it a triangle on the edge it lies past; the notes give their values."""
    ax.set_ylim(low, high)
    for edge, past, marker in ((high, y > high, "^"), (low, y < low, "v")):
        if past.any():
            ax.plot(
                x[past],
                np.full(int(past.sum()), edge),
                ls="none",
                marker=marker,
                ms=5,
                color=c,
                mec="black",
                mew=0.5,
                clip_on=False,
                label="far sample (value in the notes)",
            )


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
        _intervals(ax, rows, "KPI", i + slot(kx), c)
    _configuration_ticks(ax, list(groups))
    ax.set_ylabel(data.meta["y_label"])
    ax.set_xlabel("configuration (its series left to right)")


def draw_runtimes(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    """``draw_convergence``'s panels, one per runtime, on one y scale so the runtimes read
    side by side (a far sample's cut, when any panel has one, kept)."""
    draw_convergence(fig, data, palette, paper)
    for ax, (label, verdict) in zip(fig.axes, data.meta["verdicts"].items(), strict=False):
        title = ax.texts[-1]  # the panel's title, drawn last: one line a part, for narrow panels
        title.set_text("\n".join([label, *verdict.split("; ")]))
        title.set_fontsize("x-small")
    if data.meta.get("y_view"):
        return
    lows, highs = zip(*(ax.get_ylim() for ax in fig.axes), strict=True)
    for ax in fig.axes:
        ax.set_ylim(min(lows), max(highs))


def _intervals(ax: Any, rows: _Rows, part: str, x: np.ndarray, colour: Any) -> None:
    """Each two-sided KPI's interval [low, high] as a capped bar at ``x`` (nothing for a
    one-sided bound, whose low and high are nan)."""
    _, y, lo, hi = _xy(rows, part, "x", "y", "low", "high")
    has = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(y)
    if has.any():
        below, above = np.maximum(0.0, y - lo)[has], np.maximum(0.0, hi - y)[has]
        ax.errorbar(
            np.asarray(x)[has],
            y[has],
            yerr=np.vstack([below, above]),
            ls="none",
            color=colour,
            lw=1.0,
            capsize=2,
            zorder=2,
        )


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
        _intervals(ax, rows, "series KPI", i + jitter, c)
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
            marked_x(ax, r["lag"], f"period {r['lag_text']}", "#009E73")
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(8, integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: text.get(int(v), "")))
    ax.set_xlabel(data.meta["x_label"])
    ax.set_ylabel(data.meta["y_label"])
    legend_above(fig, ax.get_legend_handles_labels()[0], paper)
