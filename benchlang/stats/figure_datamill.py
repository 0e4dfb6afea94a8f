"""The numbers of DataMill's figures (de Oliveira, Petkovich, Reidemeister, Fischmeister,
"DataMill: Rigorous Performance Evaluation Made Easy", ICPE 2013): Fig. 1 (``series-boxes``, a
box per series or replicate block), Figs. 5/7/8 (``levels``, box plots by a factor's levels,
a panel per host or second factor, a colour per level of a third) and Fig. 6
(``level-means``, the mean and its 95% interval per level, a line per host); docs/figures.md.

Boxes are Tukey's (Tukey, *Exploratory Data Analysis*, 1977, ch. 2): the quartiles (numpy's
linear percentiles, as ``stats.summaries``), whiskers at the most extreme values within 1.5
IQR of the box, the values beyond as outliers, and the mean marked (DataMill Fig. 1). The
means' intervals are ``stats.summaries.summarize``'s: Student t over cluster means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from benchlang.stats.figure_data import FigureData

PAPER = "DataMill (de Oliveira et al., ICPE 2013)"
BOX_STATS = ("n", "mean", "whislo", "q1", "med", "q3", "whishi")
MAX_OUTLIERS = 100
"""Outliers listed per box (the most extreme first); the rest are counted in a note."""


def box(values: np.ndarray) -> tuple[list[tuple[str, float]], int]:
    """Tukey's box of the finite ``values`` as (stat, value) pairs, the outliers as
    ("outlier", value) pairs (at most MAX_OUTLIERS, the most extreme), and how many were left
    out of the list."""
    v = np.sort(np.asarray(values, dtype=float).ravel())
    v = v[np.isfinite(v)]
    if v.size == 0:
        return [("n", 0.0)], 0
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    reach = 1.5 * (q3 - q1)
    inside = v[(v >= q1 - reach) & (v <= q3 + reach)]
    stats = [
        ("n", float(v.size)),
        ("mean", float(v.mean())),
        ("whislo", float(inside[0])),
        ("q1", float(q1)),
        ("med", float(med)),
        ("q3", float(q3)),
        ("whishi", float(inside[-1])),
    ]
    out = v[(v < q1 - reach) | (v > q3 + reach)]
    shown = out[np.argsort(-np.abs(out - med), kind="stable")[:MAX_OUTLIERS]]
    return stats + [("outlier", float(x)) for x in np.sort(shown)], int(out.size - shown.size)


def _quantile(v: np.ndarray, start: np.ndarray, n: np.ndarray, q: float) -> np.ndarray:
    """numpy's linear quantile ``q`` of each sorted run ``v[start : start + n]`` (n > 0), by
    numpy's own index and interpolation formulas, so equal to ``np.percentile`` bit for bit."""
    virtual = n * q + (1 + q * (1 - 1 - 1)) - 1
    below = np.floor(virtual)
    t = virtual - below
    lo = start + below.astype(np.intp)
    a, b = v[lo], v[np.minimum(lo + 1, start + n - 1)]
    diff = b - a
    out = a + diff * t
    return np.asarray(np.where(t >= 0.5, b - diff * (1 - t), out))


def boxes(groups: Sequence[np.ndarray]) -> list[tuple[list[tuple[str, float]], int]]:
    """``box`` of every group in one vectorised pass (all values sorted once by group, the
    quartiles and whiskers read by index): the same numbers, a thousand boxes in milliseconds
    where a call per box took a tenth of a second."""
    parts = [np.asarray(g, dtype=float).ravel() for g in groups]
    parts = [g[np.isfinite(g)] for g in parts]
    n = np.array([g.size for g in parts], dtype=np.intp)
    if not parts or not n.any():
        return [box(g) for g in parts]
    flat = np.concatenate(parts)
    gid = np.repeat(np.arange(n.size), n)
    v = flat[np.lexsort((flat, gid))]
    start = np.r_[0, np.cumsum(n)[:-1]]
    full = n > 0
    s, m = start[full], n[full]
    q1, med, q3 = (_quantile(v, s, m, q) for q in (0.25, 0.5, 0.75))
    reach = 1.5 * (q3 - q1)
    low, high = np.full(n.size, np.nan), np.full(n.size, np.nan)
    low[full], high[full] = q1 - reach, q3 + reach
    outside = (v < low[gid]) | (v > high[gid])
    below = np.add.reduceat((v < low[gid]).astype(np.intp), start[full])
    above = np.add.reduceat((v > high[gid]).astype(np.intp), start[full])
    out: list[tuple[list[tuple[str, float]], int]] = [([("n", 0.0)], 0)] * n.size
    for k, i in enumerate(np.flatnonzero(full).tolist()):
        run = v[s[k] : s[k] + m[k]]
        stats = [
            ("n", float(m[k])),
            ("mean", float(run.mean())),
            ("whislo", float(run[below[k]])),
            ("q1", float(q1[k])),
            ("med", float(med[k])),
            ("q3", float(q3[k])),
            ("whishi", float(run[m[k] - 1 - above[k]])),
        ]
        far = run[outside[s[k] : s[k] + m[k]]]
        shown = far[np.argsort(-np.abs(far - med[k]), kind="stable")[:MAX_OUTLIERS]]
        out[i] = (
            stats + [("outlier", float(x)) for x in np.sort(shown)],
            int(far.size - shown.size),
        )
    return out


def _boxes(
    keys: Sequence[tuple[Any, ...]], groups: Sequence[np.ndarray]
) -> tuple[list[tuple[Any, ...]], list[str]]:
    rows: list[tuple[Any, ...]] = []
    notes: list[str] = []
    for key, (stats, hidden) in zip(keys, boxes(groups), strict=True):
        rows += [(*key, stat, value) for stat, value in stats]
        if hidden:
            notes.append(
                f"{' '.join(map(str, key))}: {hidden:,} more outliers beyond the {MAX_OUTLIERS} "
                "most extreme drawn"
            )
    return rows, notes


def series_boxes(
    labels: Sequence[str],
    groups: Sequence[Sequence[tuple[str, np.ndarray]]],
    by: str,
    metric: str,
    unit: str,
) -> FigureData:
    """Fig. 1: per configuration, a box of its trials' ``metric`` in each series (or replicate
    block, ``by``), the mean marked: how much a result moves between repetitions of the whole
    experiment, which one series cannot show."""
    keys = [(label, name) for label, parts in zip(labels, groups, strict=True) for name, _ in parts]
    rows, notes = _boxes(keys, [v for parts in groups for _, v in parts])
    caption = (
        f"{metric} of every trial, a box per {by} of each configuration (Tukey: the quartiles, "
        "whiskers to the furthest value within 1.5 IQR, outliers beyond), the mean marked "
        f"(diamond). Boxes that differ across {by}s of one configuration show variation a "
        f"single {by} would hide. After {PAPER} Fig. 1."
    )
    return FigureData(
        "series-boxes",
        f"{PAPER} Fig. 1",
        caption,
        ("configuration", by, "stat", "value"),
        rows,
        notes,
        {"y_label": f"{metric} ({unit})" if unit else metric, "by": by},
    )


def levels(
    keys: Sequence[tuple[str, str, str]],
    groups: Sequence[np.ndarray],
    roles: tuple[str, str | None, str | None],
    metric: str,
    unit: str,
    pooled: Sequence[str] = (),
) -> FigureData:
    """Figs. 5/7/8: a box of ``metric`` per level of the factor on x, in a panel per host or
    second factor, a colour per level of a third (``roles``: x, panel, colour; None when
    absent). ``keys`` are (panel, level, colour) per group; ``pooled`` names the factors not
    drawn, whose levels each box pools."""
    rows, notes = _boxes(keys, groups)
    x, panel, colour = roles
    where = (f", a panel per {panel}" if panel else "") + (
        f", a colour per {colour}" if colour else ""
    )
    pools = f" Each box pools the levels of {', '.join(pooled)}." if pooled else ""
    caption = (
        f"{metric} of every trial by {x}{where}: Tukey boxes (quartiles, whiskers within 1.5 "
        f"IQR, outliers beyond), the mean marked (diamond).{pools} After {PAPER} Figs. 5, 7 "
        "and 8."
    )
    return FigureData(
        "levels",
        f"{PAPER} Figs. 5, 7, 8",
        caption,
        ("panel", x, "colour", "stat", "value"),
        rows,
        notes,
        {
            "y_label": f"{metric} ({unit})" if unit else metric,
            "x": x,
            "panel": panel,
            "colour": colour,
        },
    )


def level_means(
    keys: Sequence[tuple[str, str]],
    groups: Sequence[np.ndarray],
    clusters: Sequence[np.ndarray],
    roles: tuple[str, str | None],
    metric: str,
    unit: str,
    confidence: float = 95.0,
    pooled: Sequence[str] = (),
) -> FigureData:
    """Fig. 6: the mean of ``metric`` per level of the factor on x, a line per host (or second
    factor, ``roles``), with its ``confidence`` interval: ``stats.summaries.summarize``,
    Student t over the means of the coarsest clustering unit (host, series, round) with enough
    units (Donald & Lang 2007). Where it gives none, the mean is drawn alone and a note says
    why (descriptive only)."""
    from benchlang.stats.summaries import summarize  # imports stats.ab: not for the boxes

    rows: list[tuple[Any, ...]] = []
    said: dict[str, list[str]] = {}
    for (line, level), values, cl in zip(keys, groups, clusters, strict=True):
        s = summarize(values, cl, confidence=confidence)
        rows.append(
            (line, level, s.n, s.mean, s.lower, s.upper, s.level or "", s.clusters, s.descriptive)
        )
        note = f"descriptive only, no interval ({s.reason})" if s.descriptive and s.n else s.note
        if note:
            said.setdefault(note, []).append(f"{line} {level}".strip())
    notes = [f"{text}: {', '.join(where)}" for text, where in said.items()]
    x, line_role = roles
    pools = f" Each mean pools the levels of {', '.join(pooled)}." if pooled else ""
    caption = (
        f"Mean {metric} per level of {x}"
        + (f", a line per {line_role}" if line_role else "")
        + f", with its {confidence:g}% confidence interval: Student t over the means of the "
        "coarsest clustering unit (host, series or round) with at least 3 units (Donald & "
        f"Lang 2007; benchlang's per-configuration mean interval).{pools} After {PAPER} Fig. 6."
    )
    return FigureData(
        "level-means",
        f"{PAPER} Fig. 6",
        caption,
        (
            line_role or "line",
            x,
            "n",
            "mean",
            "low",
            "high",
            "clustered_by",
            "clusters",
            "descriptive",
        ),
        rows,
        notes,
        {
            "y_label": f"mean {metric} ({unit})" if unit else f"mean {metric}",
            "x": x,
            "line": line_role,
            "confidence": confidence,
        },
    )
