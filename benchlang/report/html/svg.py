"""A small SVG chart writer for the report's plots: one pair of axes with nice ticks, a grid,
a title, axis labels, a legend row and an italic note, written as text in one pass.

Why not matplotlib: its text layout and SVG writer cost about 0.2 s per figure, so a report of
31 plots spent six seconds drawing; the report's plots (dots, lines, steps, bands, boxes, bars,
intervals) need none of its machinery. Text stays text, nothing is rasterised, no id is used
(two inline SVGs can never collide), and a browser scales the figure with its ``viewBox``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

import attrs
import numpy as np

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"
MUTED = "#57606a"
CHAR = 0.62
"""Average glyph width of a sans-serif face, in font sizes (for margins)."""


def text_width(text: str, size: float) -> float:
    return len(text) * size * CHAR


def nice_ticks(lo: float, hi: float, target: int = 6, integer: bool = False) -> np.ndarray:
    """At most ``target`` + 1 round values (1, 2, 2.5, 5 x 10^k apart) inside [lo, hi];
    whole numbers only with ``integer`` (positions, counts)."""
    span = hi - lo
    raw = span / target
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if span / (m * mag) <= target)
    if integer:
        step = max(1.0, float(math.ceil(step)))
    first = math.ceil(lo / step - 1e-9) * step
    count = math.floor((hi - first) / step + 1e-9) + 1
    return first + step * np.arange(max(count, 1))


def tick_labels(ticks: np.ndarray) -> list[str]:
    """The shortest labels that tell the ticks apart: fixed decimals, or %g when large/tiny."""
    top = float(np.max(np.abs(ticks))) if ticks.size else 0.0
    step = float(np.min(np.diff(ticks))) if ticks.size > 1 else (top or 1.0)
    if top >= 1e7 or 0 < top < 1e-4:
        for digits in range(2, 18):
            labels = [f"{t:.{digits}g}" for t in ticks]
            if len(set(labels)) == len(labels):
                return labels
        return labels
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    while decimals < 12 and abs(round(step, decimals) - step) > step * 1e-6:
        decimals += 1
    while True:
        labels = [f"{0.0 if abs(t) < step * 1e-9 else t:.{decimals}f}" for t in ticks]
        if len(set(labels)) == len(labels) or decimals > 12:
            return labels
        decimals += 1


def limits(values: Sequence[np.ndarray], margin: float = 0.05) -> tuple[float, float]:
    """Data limits of every finite value, widened by ``margin`` of the span on both sides."""
    finite = [v[np.isfinite(v)] for v in (np.asarray(a, float).ravel() for a in values)]
    finite = [v for v in finite if v.size]
    if not finite:
        return 0.0, 1.0
    lo = min(float(v.min()) for v in finite)
    hi = max(float(v.max()) for v in finite)
    if hi == lo:
        pad = abs(lo) * 0.05 or 0.5
        return lo - pad, hi + pad
    pad = (hi - lo) * margin
    return lo - pad, hi + pad


def _whole(values: Sequence[np.ndarray]) -> bool:
    """Every finite value a whole number (an axis of positions or counts)."""
    finite = [v[np.isfinite(v)] for v in values if v.size]
    return bool(finite) and all(np.all(v == np.round(v)) for v in finite)


def fmt(values: np.ndarray) -> list[str]:
    return [f"{v:.1f}" for v in np.asarray(values, float).tolist()]


@attrs.frozen
class Frame:
    """The plot area in pixels and the data limits it shows."""

    left: float
    top: float
    right: float
    bottom: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]

    def x(self, v) -> np.ndarray:
        lo, hi = self.xlim
        return self.left + (np.asarray(v, float) - lo) / (hi - lo) * (self.right - self.left)

    def y(self, v) -> np.ndarray:
        lo, hi = self.ylim
        return self.bottom - (np.asarray(v, float) - lo) / (hi - lo) * (self.bottom - self.top)


def polyline(xs: np.ndarray, ys: np.ndarray) -> str:
    """Path data through the points; a non-finite point breaks the line (as matplotlib does)."""
    ok = np.isfinite(xs) & np.isfinite(ys)
    out, pen = [], False
    for good, a, b in zip(ok.tolist(), fmt(xs), fmt(ys), strict=True):
        if good:
            out.append(f"{'L' if pen else 'M'}{a} {b}")
        pen = good
    return "".join(out)


def dots(xs: np.ndarray, ys: np.ndarray, r: float) -> str:
    """Path data of a filled circle at every finite point (two arcs each)."""
    ok = np.isfinite(xs) & np.isfinite(ys)
    d = f"{2 * r:.1f}"
    return "".join(
        f"M{a} {b}a{r:g} {r:g} 0 1 0 {d} 0a{r:g} {r:g} 0 1 0 -{d} 0"
        for a, b in zip(fmt(xs[ok] - r), fmt(ys[ok]), strict=True)
    )


def path(d: str, stroke: str = "none", fill: str = "none", **extra: object) -> str:
    if not d:
        return ""
    more = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in extra.items())
    return f'<path d="{d}" stroke="{stroke}" fill="{fill}"{more}/>'


def text(x: float, y: float, body: str, size: float = 11, **extra: object) -> str:
    more = "".join(f' {k.replace("_", "-")}="{v}"' for k, v in extra.items())
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size:g}"{more}>{escape(body)}</text>'


@attrs.define
class Chart:
    """Collect what to draw with its data extent, then ``render`` once the limits are known.

    Each item is a function of the ``Frame``; ``legend`` holds (label, kind, colour, dash)
    with kind ``line``, ``dot`` or ``band``; categorical axes get their labels in
    ``xcats``/``ycats`` as (position, label).
    """

    width: float = 640.0
    height: float = 300.0
    xs: list = attrs.field(factory=list)
    ys: list = attrs.field(factory=list)
    items: list[Callable[[Frame], str]] = attrs.field(factory=list)
    legend: list[tuple[str, str, str, str]] = attrs.field(factory=list)
    xcats: list[tuple[float, str]] | None = None
    ycats: list[tuple[float, str]] | None = None
    xlim: tuple[float, float] | None = None
    ylim: tuple[float, float] | None = None
    rotate_x: bool = False

    def add(self, draw: Callable[[Frame], str], x=(), y=()) -> None:
        self.items.append(draw)
        self.xs.append(np.asarray(x, float))
        self.ys.append(np.asarray(y, float))

    def key(self, label: str | None, kind: str, colour: str, dash: str = "") -> None:
        if label and all(label != k[0] for k in self.legend):
            self.legend.append((label, kind, colour, dash))

    def _legend(self, y0: float) -> tuple[list[str], float]:
        """The legend as rows of swatch + label across the top; its height."""
        out, x, y = [], 8.0, y0
        for label, kind, colour, dash in self.legend:
            w = 22 + text_width(label, 10) + 14
            if x + w > self.width - 8 and x > 8:
                x, y = 8.0, y + 15
            if kind == "band":
                swatch = path(f"M{x:.1f} {y - 8:.1f}h16v9h-16z", fill=colour, fill_opacity=0.25)
            elif kind == "dot":
                swatch = path(dots(np.array([x + 8]), np.array([y - 3.5]), 2.5), fill=colour)
            else:
                extra = {"stroke_dasharray": dash} if dash else {}
                swatch = path(f"M{x:.1f} {y - 3.5:.1f}h16", colour, stroke_width=2, **extra)
            out += [swatch, text(x + 21, y, label, 10, fill=MUTED)]
            x += w
        return out, (y - y0 + 15 if self.legend else 0.0)

    def render(self, title: str, xlabel: str, ylabel: str, note: str | None = None) -> str:
        xlim = self.xlim or limits(self.xs)
        ylim = self.ylim or limits(self.ys)
        xt = np.array([p for p, _ in self.xcats]) if self.xcats is not None else None
        yt = np.array([p for p, _ in self.ycats]) if self.ycats is not None else None
        xt = nice_ticks(*xlim, integer=_whole(self.xs)) if xt is None else xt
        yt = nice_ticks(*ylim) if yt is None else yt
        xl = [lab for _, lab in self.xcats] if self.xcats is not None else tick_labels(xt)
        yl = [lab for _, lab in self.ycats] if self.ycats is not None else tick_labels(yt)
        head = [text(8, 16, title, 13, font_weight="600")]
        keys, legend_height = self._legend(34)
        top = 26 + legend_height + 8
        widest_y = max((text_width(s, 10) for s in yl), default=0.0)
        left = min(self.width * 0.6, 8 + (16 if ylabel else 0) + widest_y + 8)
        widest_x = max((text_width(s, 9) for s in xl), default=0.0)
        tick_height = 0.42 * widest_x + 12 if self.rotate_x else 14
        bottom = self.height - 8 - (16 if xlabel else 0) - tick_height
        f = Frame(left, top, self.width - 14, bottom, xlim, ylim)
        xp, yp = f.x(xt), f.y(yt)
        xs_, ys_ = fmt(xp), fmt(yp)
        grid = path(
            "".join(f"M{a} {f.top:.1f}V{f.bottom:.1f}" for a in xs_)
            + "".join(f"M{f.left:.1f} {b}H{f.right:.1f}" for b in ys_),
            "#000",
            stroke_opacity=0.1,
        )
        body = [
            grid,
            path(f"M{f.left:.1f} {f.top:.1f}V{f.bottom:.1f}", MUTED),
            path(f"M{f.left:.1f} {f.bottom:.1f}H{f.right:.1f}", MUTED),
            path("".join(f"M{a} {f.bottom:.1f}v4" for a in xs_), MUTED),
            path("".join(f"M{f.left:.1f} {b}h-4" for b in ys_), MUTED),
        ]
        body += [draw(f) for draw in self.items]
        for a, lab in zip(xp.tolist(), xl, strict=True):
            if self.rotate_x:
                spot = f"translate({a:.1f} {f.bottom + 10:.1f}) rotate(-25)"
                body.append(text(0, 0, lab, 9, text_anchor="end", transform=spot))
            else:
                body.append(text(a, f.bottom + 15, lab, 10, text_anchor="middle"))
        body += [
            text(f.left - 7, b + 3.5, lab, 10, text_anchor="end")
            for b, lab in zip(yp.tolist(), yl, strict=True)
        ]
        if xlabel:
            mid = (f.left + f.right) / 2
            body.append(text(mid, self.height - 8, xlabel, 11, text_anchor="middle"))
        if ylabel:
            spot = f"translate(14 {(f.top + f.bottom) / 2:.1f}) rotate(-90)"
            body.append(text(0, 0, ylabel, 11, text_anchor="middle", transform=spot))
        if note:
            body.append(
                text(
                    f.right - 2,
                    f.bottom - 4,
                    note,
                    9,
                    text_anchor="end",
                    fill=MUTED,
                    font_style="italic",
                )
            )
        w, h = f"{self.width:g}", f"{self.height:g}"
        return (
            f'<svg viewBox="0 0 {w} {h}" width="{w}" '
            f'height="{h}" font-family="{FONT}" fill="#1b1f24">'
            + "".join(head + keys + body)
            + "</svg>"
        )
