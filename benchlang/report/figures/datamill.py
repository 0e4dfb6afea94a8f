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
from benchlang.report.figures.render import MARKERS, OKABE_ITO, Palette, legend_above, panels
from benchlang.stats import figure_datamill as fd
from benchlang.stats.figure_data import FigureData

MAX_COLOURS = len(OKABE_ITO)


@attrs.frozen
class Trials:
    """One metric's successful trials: values in the display unit, and their factor levels."""

    metric: str
    unit: str
    values: np.ndarray
    ok: np.ndarray
    levels: tuple[dict, ...]
    hosts: np.ndarray


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
    return Trials(name, unit or "", raw / factor, ok, data.table.levels, data.table.host)


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
        seen = {lv.get(name) for lv, k in zip(t.levels, t.ok, strict=True) if k} - {None}
        if len(seen) < 2:
            continue
        order = [lv for lv in declared.get(name, []) if lv in seen]
        order += sorted(seen - set(order), key=lambda v: (isinstance(v, str), v))
        out.append((name, order))
    return out


def _column(t: Trials, name: str) -> np.ndarray:
    if name == "host":
        return np.asarray(t.hosts, dtype=object)
    return np.array([lv.get(name) for lv in t.levels], dtype=object)


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
        mine = t.ok & (config == index)
        parts = [(str(g), t.values[mine & (group == g)]) for g in sorted(set(group[mine].tolist()))]
        names.append(label)
        groups.append(parts)
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


def _stats(rows: list[dict]) -> dict[str, Any]:
    """matplotlib's ``bxp`` statistics of one box from its long rows."""
    got = {r["stat"]: r["value"] for r in rows if r["stat"] != "outlier"}
    fliers = [r["value"] for r in rows if r["stat"] == "outlier"]
    return {**got, "fliers": fliers, "label": ""}


def _group(rows: list[dict], *keys: str) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def _bxp(ax: Any, stats: list[dict], positions: list[float], colour: str, width: float) -> None:
    drawable = [s for s in stats if s.get("n", 0) > 0]
    if not drawable:
        return
    ax.bxp(
        drawable,
        positions=[p for p, s in zip(positions, stats, strict=True) if s.get("n", 0) > 0],
        widths=width,
        showmeans=True,
        patch_artist=True,
        manage_ticks=False,
        boxprops={"facecolor": colour, "alpha": 0.55, "edgecolor": "black", "lw": 0.6},
        medianprops={"color": "black", "lw": 1},
        meanprops={
            "marker": "D",
            "markerfacecolor": "white",
            "markeredgecolor": "black",
            "markersize": 3.5,
        },
        flierprops={"marker": ".", "markersize": 2, "markeredgecolor": colour},
        whiskerprops={"lw": 0.6},
        capprops={"lw": 0.6},
    )


def draw_series_boxes(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    by = data.meta["by"]
    configs = _group(data.where(), "configuration")
    axes = panels(fig, len(configs), paper, by, data.meta["y_label"])
    for ax, ((label,), rows) in zip(axes, configs.items(), strict=True):
        groups = _group(rows, by)
        _bxp(
            ax,
            [_stats(r) for r in groups.values()],
            list(range(len(groups))),
            palette.colour(label),
            0.6,
        )
        ax.set_xticks(range(len(groups)), [g for (g,) in groups])
        ax.set_title(label, fontsize="small", color=palette.colour(label))


def draw_levels(fig: Any, data: FigureData, palette: Palette, paper: bool) -> None:
    meta = data.meta
    x = meta["x"]
    by_panel = _group(data.where(), "panel")
    axes = panels(fig, len(by_panel), paper, x, meta["y_label"])
    colours = list(dict.fromkeys(r["colour"] for r in data.where()))
    width = 0.8 / max(1, len(colours))
    for ax, ((panel,), rows) in zip(axes, by_panel.items(), strict=True):
        levels = list(dict.fromkeys(r[x] for r in rows))
        for j, colour in enumerate(colours):
            boxes = _group([r for r in rows if r["colour"] == colour], x)
            at = [levels.index(lv) + (j - (len(colours) - 1) / 2) * width for (lv,) in boxes]
            _bxp(
                ax, [_stats(r) for r in boxes.values()], at, OKABE_ITO[j % MAX_COLOURS], width * 0.9
            )
        ax.set_xticks(range(len(levels)), levels)
        if panel:
            ax.set_title(f"{meta['panel']} = {panel}", fontsize="small")
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
    lines = _group(rows, line_role or "line")
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
