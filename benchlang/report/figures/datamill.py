"""DataMill's figures (de Oliveira et al., ICPE 2013): Fig. 1 ``series-boxes``, Figs. 5/7/8
``levels``, Fig. 6 ``level-means``, from the store's trials and their factor levels (declared,
hardware and hidden factors, replicate blocks). Numbers from ``stats.figure_datamill``;
drawings in ``datamill_draw`` (matplotlib, lazily). Values are in the display unit the CLI
prints (``report.table.metric_scale``)."""

from __future__ import annotations

import attrs
import numpy as np

from benchlang.report.figures import FigureKind, Inputs, NotApplicable, shared
from benchlang.report.figures.datamill_draw import (
    MAX_COLOURS,
    draw_level_means,
    draw_levels,
    draw_series_boxes,
)
from benchlang.stats import figure_datamill as fd
from benchlang.stats.figure_data import FigureData


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
    sessions: np.ndarray | None = None
    """In a campaign (several stores read as sessions), each trial's session number (from 1,
    as text: a panel "session = 2"); None for one store."""


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
    """The metric's trials with their level codes, built once for the three figures."""
    name = _metric_name(inputs, metric, figure)
    return shared(inputs, ("trials", name), lambda: _trials(inputs, name))


def _trials(inputs: Inputs, name: str) -> Trials:
    from benchlang.report.table import metric_scale

    data = inputs.data
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
    sessions = None
    if len(getattr(inputs, "stores", ())) > 1:
        sessions = np.array([str(s + 1) for s in data.table.sessions.tolist()], object)
    return Trials(
        name,
        unit or "",
        raw / factor,
        ok,
        levels,
        data.table.host,
        codes,
        tuple(distinct),
        sessions,
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
    if name == "session" and t.sessions is not None:
        return t.sessions
    if name == "host":
        return np.asarray(t.hosts, dtype=object)
    per_set = np.empty(len(t.distinct), dtype=object)
    per_set[:] = [lv.get(name) for lv in t.distinct]
    return per_set[t.codes]


def _roles(inputs: Inputs, t: Trials, figure: str, n: int) -> list[tuple[str, list]]:
    """x, then the panel (or line) role, then the colour: sessions take the second role in a
    campaign (never pooled), hosts the next when the trials ran on several."""
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
    if t.sessions is not None:
        named = sorted(set(t.sessions[t.ok].tolist()), key=int)
        factors.insert(1, ("session", named))
    return factors[:n]


def _sessions_note(inputs: Inputs, data: FigureData, drawn: str) -> FigureData:
    """A campaign's figure says which sessions (stores) it shows and how."""
    stores = getattr(inputs, "stores", ())
    if len(stores) < 2:
        return data
    named = "; ".join(f"session {i + 1} = {s}" for i, s in enumerate(stores))
    note = f"{len(stores)} sessions, {drawn} ({named})"
    return attrs.evolve(data, notes=(*data.notes, note))


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
    named = _in_sessions(t, group, data.table.sessions) if t.sessions is not None else None
    names, groups = [], []
    for index, label, _b, _l in data.configurations():
        mine = np.flatnonzero(t.ok & (config == index))
        which, inverse = np.unique(group[mine], return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        cuts = np.searchsorted(inverse[order], np.arange(1, which.size))
        values = np.split(t.values[mine][order], cuts)
        names.append(label)
        shown = [str(g) if named is None else named[g] for g in which.tolist()]
        groups.append(list(zip(shown, values, strict=True)))
    built = fd.series_boxes(names, groups, by, t.metric, t.unit)
    return _sessions_note(inputs, built, f"each box labelled S<session>.<{by} in it>")


def _in_sessions(t: Trials, group: np.ndarray, session: np.ndarray) -> dict:
    """Each series (or block) of a campaign named by its session and its place there."""
    out: dict[int, str] = {}
    for s in np.unique(session).tolist():
        mine = np.unique(group[session == s]).tolist()
        out |= {g: f"S{s + 1}.{k}" for k, g in enumerate(mine)}
    return out


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
    """The factors (and hosts, which a campaign's sessions can push out) not drawn."""
    hosts = len(set(np.asarray(t.hosts)[t.ok].tolist())) > 1 and "host" not in drawn
    return [name for name, _ in factor_order(inputs, t) if name not in drawn] + ["host"] * hosts


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
        (roles[0][0], names[1], names[2]),
        t.metric,
        t.unit,
        _pooled(inputs, t, [n for n in names if n]),
    )
    data = attrs.evolve(data, notes=(*data.notes, *notes)) if notes else data
    return _sessions_note(inputs, data, "a panel per session")


def level_means_data(inputs: Inputs, metric: str | None) -> FigureData:
    from benchlang.report.results import trial_clusters

    t = trials(inputs, metric, "level-means")
    roles = _roles(inputs, t, "level-means", 2)
    keys, groups = _keys(t, roles)
    clusters, _ = trial_clusters(inputs.data)
    rows = [(str(combo[0]) if combo else "", str(level)) for combo, level, _m in keys]
    names = [name for name, _ in roles] + [None]
    data = fd.level_means(
        rows,
        groups,
        [clusters[m] for _c, _l, m in keys],
        (roles[0][0], names[1]),
        t.metric,
        t.unit,
        pooled=_pooled(inputs, t, [n for n in names if n]),
    )
    return _sessions_note(inputs, data, "a line per session, each interval within its session")


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
