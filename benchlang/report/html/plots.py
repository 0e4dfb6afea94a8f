"""The report's plots as inline SVG (``benchlang.report.html.svg`` writes them).

Why static SVG: it needs no script, so the page stays one file that works offline, prints
well and scales without blurring; text stays text, which keeps files small. Plots never draw
more than ``MAX_POINTS`` markers per series: beyond that they show evenly spaced points and
say so on the plot (``thin``); statistics are always computed on all the data before plotting.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from benchlang.report.figures.render import OKABE_ITO, Palette
from benchlang.report.html.svg import Chart, dots, path, polyline

MAX_POINTS = 400
COLOURS = OKABE_ITO
"""The figures' colour-blind-safe palette (Okabe & Ito), so a plot of the page and a figure
never give one thing two colours."""
SVG_DASHES = {"-": "", "--": "6 3", ":": "2 2", "-.": "6 2 2 2"}
"""matplotlib's line styles (``Palette.dash``) as SVG dash arrays."""


def cues(palette: Palette, label: str) -> tuple[str, str]:
    """A configuration's colour and dash, as in every figure of its store."""
    return palette.colour(label), SVG_DASHES[palette.dash(label)]


def thin(n: int, limit: int = MAX_POINTS) -> tuple[np.ndarray, str | None]:
    """Indices of at most ``limit`` evenly spaced items of ``n``, and the note that says so."""
    if n <= limit:
        return np.arange(n), None
    idx = np.unique(np.round(np.linspace(0, n - 1, limit)).astype(np.int64))
    return idx, f"showing {idx.size:,} of {n:,} points, evenly spaced"


def _lines_at(chart: Chart, where: str, items, colour, dash: str) -> None:
    """Labelled lines across the plot: vertical at x (``where`` = "x") or horizontal at y."""
    for j, (label, at) in enumerate(items):
        if not np.isfinite(at):
            continue
        c = colour(j)
        d = dash if dash else f"4 {2 + j}"

        def draw(f, at=at, c=c, d=d) -> str:
            if where == "x":
                line = f"M{float(f.x(at)):.1f} {f.top:.1f}V{f.bottom:.1f}"
            else:
                line = f"M{f.left:.1f} {float(f.y(at)):.1f}H{f.right:.1f}"
            return path(line, c, stroke_dasharray=d)

        chart.add(draw, x=[at] if where == "x" else (), y=[at] if where == "y" else ())
        chart.key(label, "line", c, d)


def lines(
    curves: Sequence[tuple[str, np.ndarray, np.ndarray]],
    title: str,
    xlabel: str,
    ylabel: str,
    *,
    bands: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = (),
    vlines: Sequence[tuple[str, float]] = (),
    markers: bool = False,
    note: str | None = None,
    styles: Sequence[tuple[str, str]] | None = None,
) -> str:
    """Curves (label, x, y), shaded bands (label, x, low, high) and labelled vertical lines.

    ``styles`` gives each curve its (colour, dash) (``cues``: one per configuration); with
    ``markers`` such curves draw their points joined by the dashed line, a second cue where
    colours repeat."""
    chart = Chart()
    for i, (label, at, low, high) in enumerate(bands):
        at, low, high = (np.asarray(a, float) for a in (at, low, high))
        ok = np.isfinite(at) & np.isfinite(low) & np.isfinite(high)
        at, low, high = at[ok], low[ok], high[ok]
        c = COLOURS[(i + 1) % 7]

        def band(f, at=at, low=low, high=high, c=c) -> str:
            xs, ys = np.concatenate((at, at[::-1])), np.concatenate((low, high[::-1]))
            d = polyline(f.x(xs), f.y(ys))
            return path(d + "Z" if d else "", fill=c, fill_opacity=0.2)

        chart.add(band, x=at, y=np.concatenate((low, high)))
        chart.key(label, "band", c)
    for i, (label, x, y) in enumerate(curves):
        x, y = np.asarray(x, float), np.asarray(y, float)
        c, dash = styles[i] if styles is not None else (COLOURS[i % 7], None)

        def curve(f, x=x, y=y, c=c, dash=dash) -> str:
            if markers and dash is not None:
                extra = {"stroke_dasharray": dash} if dash else {}
                line = path(polyline(f.x(x), f.y(y)), c, stroke_width=1.2, **extra)
                return line + path(dots(f.x(x), f.y(y), 2.5), fill=c)
            if markers:
                return path(dots(f.x(x), f.y(y), 2.5), fill=c)
            return path(polyline(f.x(x), f.y(y)), c, stroke_width=1.5, stroke_linejoin="round")

        chart.add(curve, x=x, y=y)
        chart.key(label, "line" if dash is not None or not markers else "dot", c, dash or "")
    _lines_at(chart, "x", vlines, lambda j: COLOURS[(j + 1) % 7], "5 3")
    return chart.render(title, xlabel, ylabel, note)


def intervals(
    items: Sequence[tuple[str, float, float | None, float | None]],
    title: str,
    xlabel: str,
    *,
    reference: float | None = None,
    note: str | None = None,
) -> str:
    """A forest plot: one row per (label, estimate, low, high), reference line at ``reference``."""
    n = len(items)
    chart = Chart(height=min(100 * (1.2 + 0.32 * n), 900.0))
    chart.ycats = [(float(n - 1 - i), label) for i, (label, *_) in enumerate(items)]
    chart.ylim = (-0.6, n - 0.4)
    for i, (_label, est, lo, hi) in enumerate(items):
        y = float(n - 1 - i)
        whole = lo is not None and hi is not None and bool(np.isfinite([lo, hi]).all())

        def row(f, y=y, est=est, lo=lo, hi=hi, whole=whole) -> str:
            py = float(f.y(y))
            bar = (
                path(
                    f"M{float(f.x(lo)):.1f} {py:.1f}H{float(f.x(hi)):.1f}",
                    COLOURS[0],
                    stroke_width=2.5,
                )
                if whole
                else ""
            )
            return bar + path(dots(f.x([est]), np.array([py]), 4), fill=COLOURS[1])

        chart.add(row, x=[est, lo, hi] if whole else [est])
    if reference is not None:
        _lines_at(chart, "x", [(None, reference)], lambda j: "#57606a", "5 3")
    return chart.render(title, xlabel, "", note)


def _box(v: np.ndarray):
    """One box plot's parts: quartiles, whiskers to the furthest value within 1.5 IQR (Tukey,
    as matplotlib draws them), outliers beyond (at most ``MAX_POINTS``, evenly spaced), and
    how many outliers are not drawn; None without a finite value."""
    v = np.sort(v[np.isfinite(v)])
    if not v.size:
        return None
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    reach = 1.5 * (q3 - q1)
    inside = v[(v >= q1 - reach) & (v <= q3 + reach)]
    lo, hi = (inside[0], inside[-1]) if inside.size else (q1, q3)
    out = v[(v < lo) | (v > hi)]
    keep, _ = thin(out.size)
    return (q1, med, q3, lo, hi, out[keep]), out.size - keep.size


def _draw_box(f, g: int, parts) -> str:
    q1, med, q3, lo, hi, out = parts
    x0, x1, xc = (float(f.x(g + 1 + d)) for d in (-0.25, 0.25, 0.0))
    cap0, cap1 = (float(f.x(g + 1 + d)) for d in (-0.12, 0.12))
    y1, ym, y3, ylo, yhi = (float(f.y(a)) for a in (q1, med, q3, lo, hi))
    box = (
        f"M{x0:.1f} {y1:.1f}H{x1:.1f}V{y3:.1f}H{x0:.1f}Z"
        f"M{xc:.1f} {y1:.1f}V{ylo:.1f}M{cap0:.1f} {ylo:.1f}H{cap1:.1f}"
        f"M{xc:.1f} {y3:.1f}V{yhi:.1f}M{cap0:.1f} {yhi:.1f}H{cap1:.1f}"
    )
    return (
        path(box, "#1b1f24")
        + path(f"M{x0:.1f} {ym:.1f}H{x1:.1f}", COLOURS[4], stroke_width=2)
        + path(dots(np.full(out.size, xc), f.y(out), 2.0), "#1b1f24", stroke_width=0.8)
    )


def points(
    groups: Sequence[tuple[str, np.ndarray]],
    title: str,
    ylabel: str,
    *,
    note: str | None = None,
    boxes: bool = False,
) -> str:
    """Values per group as jittered points (or Tukey boxes), every group drawn; the chart
    widens with the number of groups."""
    rng = np.random.default_rng(0)
    chart = Chart(width=max(640.0, 120.0 + 24.0 * len(groups)), rotate_x=len(groups) > 3)
    chart.xcats = [(i + 1.0, name) for i, (name, _) in enumerate(groups)]
    chart.xlim = (0.5, len(groups) + 0.5)
    hidden = 0
    for i, (_, v) in enumerate(groups):
        v = np.asarray(v, float)
        if boxes:
            parts, left_out = _box(v) or (None, 0)
            hidden += left_out
            if parts is not None:
                chart.add(functools.partial(_draw_box, g=i, parts=parts), y=v)
            continue
        x = i + 1 + rng.uniform(-0.15, 0.15, v.size)

        def draw(f, x=x, v=v) -> str:
            return path(dots(f.x(x), f.y(v), 2.5), fill=COLOURS[0], fill_opacity=0.6)

        chart.add(draw, y=v)
    if hidden:
        words = f"{hidden:,} outliers not drawn (at most {MAX_POINTS} per box, evenly spaced)"
        note = f"{note}; {words}" if note else words
    return chart.render(title, "", ylabel, note)


def bars(
    names: Sequence[str],
    values: Sequence[float],
    title: str,
    ylabel: str,
    *,
    errors: Sequence[float] | None = None,
    note: str | None = None,
) -> str:
    chart = Chart(rotate_x=len(names) > 4)
    chart.xcats = [(float(i), name) for i, name in enumerate(names)]
    chart.xlim = (-0.6, len(names) - 0.4)
    vals = np.asarray(values, float)
    errs = np.zeros_like(vals) if errors is None else np.asarray(errors, float)

    def draw(f) -> str:
        base = float(f.y(0.0))
        out = []
        for i, (v, e) in enumerate(zip(vals.tolist(), errs.tolist(), strict=True)):
            if not np.isfinite(v):
                continue
            a, b, top = float(f.x(i - 0.4)), float(f.x(i + 0.4)), float(f.y(v))
            out.append(path(f"M{a:.1f} {base:.1f}V{top:.1f}H{b:.1f}V{base:.1f}Z", fill=COLOURS[0]))
            if e and np.isfinite(e):
                lo, hi, c = float(f.y(v - e)), float(f.y(v + e)), float(f.x(i))
                whisker = (
                    f"M{c:.1f} {lo:.1f}V{hi:.1f}M{c - 4:.1f} {lo:.1f}h8M{c - 4:.1f} {hi:.1f}h8"
                )
                out.append(path(whisker, "#1b1f24"))
        return "".join(out)

    chart.add(draw, y=np.concatenate(([0.0], vals - errs, vals + errs)))
    return chart.render(title, "", ylabel, note)
