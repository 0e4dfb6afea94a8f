"""The drawings of DataMill's figures (de Oliveira et al., ICPE 2013; docs/figures.md): Tukey
boxes as a few artists whatever their number, a panel per configuration or host, the level
means with their intervals. Their numbers are built in ``report.figures.datamill``."""

from __future__ import annotations

from typing import Any

import numpy as np

from benchlang.report.figures.render import (
    MARKERS,
    OKABE_ITO,
    Palette,
    dense_layer,
    legend_above,
    panel_title,
    panels,
)
from benchlang.stats import figure_datamill as fd
from benchlang.stats.figure_data import FigureData

MAX_COLOURS = len(OKABE_ITO)


def _boxes_of(data: FigureData) -> dict[tuple, dict[str, Any]]:
    """Each box's statistics and outliers by its key (the columns before ``stat``), in row
    order: one pass over the rows."""
    out: dict[tuple, dict[str, Any]] = {}
    for *key, stat, value in data.rows:
        box = out.setdefault(tuple(key), {"fliers": []})
        if stat == "outlier":
            box["fliers"].append(value)
        else:
            box[stat] = value
    return out


def _nested(boxes: dict[tuple, dict]) -> dict[Any, dict[tuple, dict]]:
    """Boxes by their key's first part."""
    out: dict[Any, dict[tuple, dict]] = {}
    for key, box in boxes.items():
        out.setdefault(key[0], {})[key[1:]] = box
    return out


def _bxp(ax: Any, stats: list[dict], positions: list[float], colour: str, width: float) -> None:
    """Tukey boxes drawn as a handful of artists (boxes, whiskers and caps, medians, means,
    outliers) whatever their number: a thousand boxes (100 series of 10 configurations) draw
    in a fraction of a second, where one artist set per box (``Axes.bxp``) took seconds. The
    boxes are one compound path and the lines one polyline broken by NaNs (a collection makes
    a path object per box in Python), so they stay vector at any number; only the outliers,
    one mark each, are an image above ``render.DENSE_POINTS`` of them in the panel."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    keep = [(p, s) for p, s in zip(positions, stats, strict=True) if s.get("n", 0) > 0]
    if not keep:
        return
    x = np.array([p for p, _ in keep], dtype=float)
    dense = {"zorder": 1.5}
    col = {k: np.array([s[k] for _, s in keep], dtype=float) for k in fd.BOX_STATS}
    half = width / 2
    corners = np.stack(
        [
            np.column_stack([x - half, col["q1"]]),
            np.column_stack([x + half, col["q1"]]),
            np.column_stack([x + half, col["q3"]]),
            np.column_stack([x - half, col["q3"]]),
        ],
        axis=1,
    )
    boxes = PathPatch(
        Path.make_compound_path_from_polys(corners),
        facecolor=colour,
        edgecolor="black",
        linewidth=0.6,
        alpha=0.55,
        **dense,
    )
    ax.add_artist(boxes)  # add_patch walks the path's segments in Python for the limits
    ax.update_datalim(corners.reshape(-1, 2))

    def lines(
        *ends: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray]:
        """Segments (x0, y0, x1, y1) as one (x, y) polyline, a NaN between segments."""
        xy = [np.stack([x0, x1, np.full_like(x0, np.nan)], 1) for x0, _y0, x1, _y1 in ends]
        yy = [np.stack([y0, y1, np.full_like(y0, np.nan)], 1) for _x0, y0, _x1, y1 in ends]
        return np.concatenate(xy).ravel(), np.concatenate(yy).ravel()

    cap = half / 2
    ax.plot(
        *lines(
            (x, col["whislo"], x, col["q1"]),
            (x, col["q3"], x, col["whishi"]),
            (x - cap, col["whislo"], x + cap, col["whislo"]),
            (x - cap, col["whishi"], x + cap, col["whishi"]),
        ),
        color="black",
        lw=0.6,
        **dense,
    )
    ax.plot(*lines((x - half, col["med"], x + half, col["med"])), color="black", lw=1.0, **dense)
    ax.plot(
        x,
        col["mean"],
        ls="none",
        marker="D",
        ms=3,
        mfc="white",
        mec="black",
        mew=0.6,
        zorder=2.2,
    )
    fliers = [(p, v) for p, s in keep for v in s["fliers"]]
    if fliers:
        fx, fy = np.array(fliers, dtype=float).T
        marks = dense_layer(ax, len(fliers))
        ax.plot(fx, fy, ls="none", marker=".", ms=2, color=colour, **marks)
    ax.autoscale_view()


def _ticks(ax: Any, names: list[str]) -> None:
    """One tick per box up to 12 boxes, else 5 evenly spaced (the boxes between unlabelled)."""
    step = 1 if len(names) <= 12 else -(-len(names) // 5)
    at = list(range(0, len(names), step))
    ax.set_xticks(at, [names[i] for i in at])
    ax.set_xlim(-0.6, len(names) - 0.4)


def draw_series_boxes(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    configs = _nested(_boxes_of(data))
    axes = panels(fig, len(configs), paper, data.meta["by"], data.meta["y_label"])
    for ax, (label, boxes) in zip(axes, configs.items(), strict=True):
        _bxp(ax, list(boxes.values()), list(range(len(boxes))), palette.colour(label), 0.6)
        _ticks(ax, [g for (g,) in boxes])
        panel_title(ax, label, palette.colour(label))


def draw_levels(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    meta = data.meta
    by_panel = _nested(_boxes_of(data))
    axes = panels(fig, len(by_panel), paper, meta["x"], meta["y_label"])
    colours = list(dict.fromkeys(colour for boxes in by_panel.values() for _l, colour in boxes))
    width = 0.8 / max(1, len(colours))
    for ax, (panel, boxes) in zip(axes, by_panel.items(), strict=True):
        levels = list(dict.fromkeys(level for level, _c in boxes))
        for j, colour in enumerate(colours):
            mine = {lv: box for (lv, c), box in boxes.items() if c == colour}
            at = [levels.index(lv) + (j - (len(colours) - 1) / 2) * width for lv in mine]
            _bxp(ax, list(mine.values()), at, OKABE_ITO[j % MAX_COLOURS], width * 0.9)
        _ticks(ax, levels)
        if panel:
            panel_title(ax, f"{meta['panel']} = {panel}")
    low = min(ax.get_ylim()[0] for ax in axes)
    high = max(ax.get_ylim()[1] for ax in axes)
    for ax in axes:
        ax.set_ylim(low, high)  # one scale: panels (hosts) are compared by eye
    if meta["colour"]:
        from matplotlib.patches import Patch

        legend_above(
            fig,
            [
                Patch(
                    facecolor=OKABE_ITO[j % MAX_COLOURS],
                    alpha=0.55,
                    edgecolor="black",
                    label=f"{meta['colour']} = {c}",
                )
                for j, c in enumerate(colours)
            ],
            paper,
        )


def _number(level: object) -> bool:
    """Whether a level (as the figure's rows hold it: text) is a number."""
    try:
        float(str(level))
    except ValueError:
        return False
    return True


def draw_level_means(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    """Each level's mean and interval as a point; joined by a line only when the levels are
    numbers (a line across unordered levels, tools or versions, draws a trend that is not
    there)."""
    meta = data.meta
    x, line_role = meta["x"], meta["line"]
    rows = data.where()
    lines: dict[tuple, list[dict]] = {}
    for r in rows:
        lines.setdefault((r[line_role or "line"],), []).append(r)
    levels = list(dict.fromkeys(r[x] for r in rows))
    numeric = all(_number(v) for v in levels)
    ax = fig.subplots()
    shift = 0.06 * (len(lines) > 1)
    handles = []
    for j, ((line,), mine) in enumerate(lines.items()):
        c, mk = OKABE_ITO[j % MAX_COLOURS], MARKERS[j % len(MARKERS)]
        at = np.array([levels.index(r[x]) for r in mine]) + (j - (len(lines) - 1) / 2) * shift
        mean = np.array([r["mean"] for r in mine], dtype=float)
        low = np.array([r["low"] for r in mine], dtype=float)
        high = np.array([r["high"] for r in mine], dtype=float)
        err = np.clip(np.nan_to_num(np.vstack([mean - low, high - mean])), 0, None)
        h = ax.errorbar(
            at,
            mean,
            yerr=err,
            color=c,
            marker=mk,
            capsize=3,
            ms=5,
            lw=1.2,
            ls="-" if numeric else "none",
            label=f"{line_role} = {line}" if line_role else "mean",
        )
        open_ = np.array([bool(r["descriptive"]) for r in mine])
        if open_.any():
            ax.plot(at[open_], mean[open_], ls="none", marker=mk, mfc="white", mec=c, ms=5)
        handles.append(h)
    ax.set_xticks(range(len(levels)), levels)
    ax.set_xlabel(x)
    ax.set_ylabel(meta["y_label"])
    if line_role:
        legend_above(fig, handles, paper)
