"""DataMill's figures (de Oliveira et al., ICPE 2013): Fig. 1 ``series-boxes``, Figs. 5/7/8
``levels``, Fig. 6 ``level-means``, from the store's trials and their factor levels (declared,
hardware and hidden factors, replicate blocks). Numbers from ``stats.figure_datamill``;
drawing here (matplotlib, lazily). Values are in the display unit the CLI prints
(``report.table.metric_scale``)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.report.figures import FigureKind, Inputs, NotApplicable
from benchlang.report.figures.render import (
    DENSE_Z,
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
RASTER_BOXES = 60
"""Above this many boxes in one panel, its boxes, whiskers, means and outliers are one image
(``render.dense_layer``)."""


@attrs.frozen
class Trials:
    """One metric's successful trials: values in the display unit, and their factor levels."""

    metric: str
    unit: str
    values: np.ndarray
    ok: np.ndarray
    levels: tuple[dict, ...]
    hosts: np.ndarray
    codes: np.ndarray
    """Each trial's index into ``distinct``: a factor's column is read from the few distinct
    level sets, not from 100,000 dicts."""
    distinct: tuple[dict, ...]


def _metric_name(inputs: Inputs, metric: str | None, figure: str) -> str:
    data = inputs.data
    names = list(data.metrics)
    if not names:
        raise NotApplicable(f"{figure} draws a metric and the spec has none")
    if metric is not None:
        if metric not in names:
            raise NotApplicable(
                f"{figure}: no metric {metric!r}", hint="metrics: " + ", ".join(names)
            )
        return metric
    anova = [c.metric for c in data.experiment.comparisons if c.method == "anova"]
    return anova[0] if anova else names[0]


def trials(inputs: Inputs, metric: str | None, figure: str) -> Trials:
    from benchlang.report.table import metric_scale

    data = inputs.data
    name = _metric_name(inputs, metric, figure)
    raw = np.asarray(data.metrics[name].values, dtype=float)
    ok = np.asarray(data.table.ok, dtype=bool) & np.isfinite(raw)
    unit, factor = metric_scale(raw[ok], data.experiment.metric(name).unit)
    levels = data.table.levels
    index: dict[int, int] = {}
    distinct: list[dict] = []
    for lv in levels:  # the store shares one dict per distinct level set
        if id(lv) not in index:
            index[id(lv)] = len(distinct)
            distinct.append(lv)
    codes = np.fromiter((index[id(lv)] for lv in levels), dtype=np.intp, count=len(levels))
    return Trials(
        name, unit or "", raw / factor, ok, levels, data.table.host, codes, tuple(distinct)
    )


def factor_order(inputs: Inputs, t: Trials) -> list[tuple[str, list]]:
    """The factors with two or more levels among the trials, each with its levels in declared
    order: an ``anova``'s terms first (the factors the spec asks about), then the declared,
    hardware and hidden factors and the replicate block."""
    exp = inputs.data.experiment
    declared = {f.name: list(f.levels) for f in exp.factors}
    declared |= {h.name: list(h.levels) for h in exp.hidden}
    names = [
        term
        for c in exp.comparisons
        if c.method == "anova"
        for term in c.settings.get("terms", ())
        if term != "host"
    ]
    names += list(declared) + [h.name for h in exp.hardware] + ["replicate"]
    out = []
    for name in dict.fromkeys(names):
        seen = set(_column(t, name)[t.ok].tolist()) - {None}
        if len(seen) < 2:
            continue
        order = [lv for lv in declared.get(name, []) if lv in seen]
        order += sorted(seen - set(order), key=lambda v: (isinstance(v, str), v))
        out.append((name, order))
    return out


def _column(t: Trials, name: str) -> np.ndarray:
    if name == "host":
        return np.asarray(t.hosts, dtype=object)
    per_set = np.empty(len(t.distinct), dtype=object)
    per_set[:] = [lv.get(name) for lv in t.distinct]
    return per_set[t.codes]


def _roles(inputs: Inputs, t: Trials, figure: str, n: int) -> list[tuple[str, list]]:
    """x, then the panel (or line) role, then the colour: hosts take the second role when the
    trials ran on several."""
    factors = factor_order(inputs, t)
    if not factors:
        raise NotApplicable(
            f"{figure} draws a metric by a factor's levels, and no factor has two levels here",
            hint="declare `factor NAME in [...]` (or a hidden or hardware factor) with two or "
            "more levels",
        )
    hosts = sorted(set(np.asarray(t.hosts)[t.ok].tolist()))
    if len(hosts) > 1:
        factors.insert(1, ("host", hosts))
    return factors[:n]


def series_boxes_data(inputs: Inputs, metric: str | None) -> FigureData:
    t = trials(inputs, metric, "series-boxes")
    data = inputs.data
    replicate = data.experiment.design.replicate > 1
    by = "replicate block" if replicate else "series"
    group = _column(t, "replicate") if replicate else np.asarray(data.table.series)
    if len(set(group[t.ok].tolist())) < 2:
        raise NotApplicable(
            "series-boxes draws a box per series or replicate block, and these trials are one",
            hint="`design { series N }` (TriScale's series) or `design { replicate N }` "
            "(DataMill's replications)",
        )
    config = np.asarray(data.table.configuration)
    names, groups = [], []
    for index, label, _b, _l in data.configurations():
        mine = np.flatnonzero(t.ok & (config == index))
        which, inverse = np.unique(group[mine], return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        cuts = np.searchsorted(inverse[order], np.arange(1, which.size))
        values = np.split(t.values[mine][order], cuts)
        names.append(label)
        groups.append([(str(g), v) for g, v in zip(which.tolist(), values, strict=True)])
    return fd.series_boxes(names, groups, by, t.metric, t.unit)


def _keys(t: Trials, roles: list[tuple[str, list]]) -> tuple[list[tuple], list[np.ndarray]]:
    columns = [_column(t, name) for name, _ in roles]
    keys, groups = [], []
    grids = [levels for _, levels in roles]
    for combo in _product(grids[1:]):
        for level in grids[0]:
            mask = t.ok & (columns[0] == level)
            for col, want in zip(columns[1:], combo, strict=True):
                mask &= col == want
            if mask.any():
                keys.append((combo, level, mask))
                groups.append(t.values[mask])
    return keys, groups


def _product(grids: list[list]) -> list[tuple]:
    out: list[tuple] = [()]
    for grid in grids:
        out = [(*p, g) for p in out for g in grid]
    return out


def _pooled(inputs: Inputs, t: Trials, drawn: list[str]) -> list[str]:
    return [name for name, _ in factor_order(inputs, t) if name not in drawn]


def levels_data(inputs: Inputs, metric: str | None) -> FigureData:
    t = trials(inputs, metric, "levels")
    roles = _roles(inputs, t, "levels", 3)
    notes = []
    if len(roles) == 3 and len(roles[2][1]) > MAX_COLOURS:
        name, lv = roles.pop()
        notes.append(f"{name} ({len(lv)} levels) is pooled: more levels than {MAX_COLOURS} colours")
    keys, groups = _keys(t, roles)
    rows = [
        (
            str(combo[0]) if len(combo) > 0 else "",
            str(level),
            str(combo[1]) if len(combo) > 1 else "",
        )
        for combo, level, _m in keys
    ]
    names = [name for name, _ in roles] + [None] * (3 - len(roles))
    data = fd.levels(
        rows,
        groups,
        (names[0], names[1], names[2]),
        t.metric,
        t.unit,
        _pooled(inputs, t, [n for n in names if n]),
    )
    return attrs.evolve(data, notes=(*data.notes, *notes)) if notes else data


def level_means_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.report.results import trial_clusters

    t = trials(inputs, metric, "level-means")
    roles = _roles(inputs, t, "level-means", 2)
    keys, groups = _keys(t, roles)
    clusters, _ = trial_clusters(inputs.data)
    rows = [(str(combo[0]) if combo else "", str(level)) for combo, level, _m in keys]
    names = [name for name, _ in roles] + [None]
    return fd.level_means(
        rows,
        groups,
        [clusters[m] for _c, _l, m in keys],
        (names[0], names[1]),
        t.metric,
        t.unit,
        pooled=_pooled(inputs, t, [n for n in names if n]),
    )


# -- the drawings -----------------------------------------------------------------------------


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
    boxes are one compound path and the lines one polyline broken by NaNs: a collection makes
    a path object per box in Python."""
    from matplotlib.patches import PathPatch
    from matplotlib.path import Path

    keep = [(p, s) for p, s in zip(positions, stats, strict=True) if s.get("n", 0) > 0]
    if not keep:
        return
    x = np.array([p for p, _ in keep], dtype=float)
    dense = dense_layer(ax, len(keep), RASTER_BOXES, usual=1.5)
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

    def lines(*ends: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
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
        zorder=DENSE_Z + 0.05 if len(keep) > RASTER_BOXES else 2.2,
    )
    fliers = [(p, v) for p, s in keep for v in s["fliers"]]
    if fliers:
        fx, fy = np.array(fliers, dtype=float).T
        ax.plot(fx, fy, ls="none", marker=".", ms=2, color=colour, **dense)
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


def draw_level_means(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    meta = data.meta
    x, line_role = meta["x"], meta["line"]
    rows = data.where()
    lines: dict[tuple, list[dict]] = {}
    for r in rows:
        lines.setdefault((r[line_role or "line"],), []).append(r)
    levels = list(dict.fromkeys(r[x] for r in rows))
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


FIGURES = (
    FigureKind(
        "series-boxes",
        "a box per series or replicate block of each configuration, mean marked (DataMill Fig. 1)",
        series_boxes_data,
        draw_series_boxes,
    ),
    FigureKind(
        "levels",
        "boxes by a factor's levels, a panel per host or factor, colour for a third "
        "(DataMill Figs. 5, 7, 8)",
        levels_data,
        draw_levels,
    ),
    FigureKind(
        "level-means",
        "mean and 95% CI per factor level, a line per host or factor (DataMill Fig. 6)",
        level_means_data,
        draw_level_means,
    ),
)
