"""Static plots as inline SVG, drawn with matplotlib (imported here, inside the functions, so no
other command pays for it).

Why static SVG: it needs no script, so the page stays one file that works offline, prints
well and scales without blurring; text stays text (``svg.fonttype none``), which keeps files
small. Plots never draw more than ``MAX_POINTS`` markers per series: beyond that they show
evenly spaced points and say so on the plot (``thin``); statistics are always computed on
all the data before plotting.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

MAX_POINTS = 400
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b")


def thin(n: int, limit: int = MAX_POINTS) -> tuple[np.ndarray, str | None]:
    """Indices of at most ``limit`` evenly spaced items of ``n``, and the note that says so."""
    if n <= limit:
        return np.arange(n), None
    idx = np.unique(np.round(np.linspace(0, n - 1, limit)).astype(np.int64))
    return idx, f"showing {idx.size:,} of {n:,} points, evenly spaced"


def _rc() -> dict[str, Any]:
    return {
        "svg.fonttype": "none",
        "svg.hashsalt": "benchlang",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "path.simplify": True,
    }


def _axes(width: float = 6.4, height: float = 3.0):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    return fig, fig.add_subplot()


def _fit(fig, ax) -> None:
    """Margins that fit the tick labels, from one measurement of the axes' extent (what
    constrained layout does iteratively, at a fraction of its cost)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    renderer = FigureCanvasAgg(fig).get_renderer()
    box = ax.get_tightbbox(renderer).transformed(fig.transFigure.inverted())
    pos = ax.get_position()
    left = min(0.45, 0.01 + pos.x0 - box.x0)
    bottom = min(0.45, 0.01 + pos.y0 - box.y0)
    right = max(0.55, 0.99 - (box.x1 - pos.x1))
    top = max(0.55, 0.99 - (box.y1 - pos.y1))
    fig.subplots_adjust(left=left, bottom=bottom, right=right, top=top)


def _svg(fig, ax, title: str, xlabel: str, ylabel: str, note: str | None) -> str:
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if note:
        ax.text(
            0.99,
            0.01,
            note,
            transform=ax.transAxes,
            ha="right",
            va="bottom",
            fontsize=7,
            color="#57606a",
            style="italic",
        )
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="best", frameon=False)
    _fit(fig, ax)
    out = io.StringIO()
    fig.savefig(out, format="svg", metadata={"Date": None})
    text = out.getvalue()
    text = text[text.index("<svg") :]
    return re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)


def plot(draw, title: str, xlabel: str, ylabel: str, note: str | None = None, **size) -> str:
    """Call ``draw(ax)`` on fresh axes under the report's style; the figure as SVG text."""
    from matplotlib import rc_context

    with rc_context(_rc()):
        fig, ax = _axes(**size)
        draw(ax)
        return _svg(fig, ax, title, xlabel, ylabel, note)


def lines(
    curves: Sequence[tuple[str, np.ndarray, np.ndarray]],
    title: str,
    xlabel: str,
    ylabel: str,
    *,
    bands: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = (),
    vlines: Sequence[tuple[str, float]] = (),
    hlines: Sequence[tuple[str, float]] = (),
    markers: bool = False,
    step: bool = False,
    horizontal: bool = False,
    note: str | None = None,
) -> str:
    """Curves (label, x, y), shaded bands (label, x, low, high; with ``horizontal`` the band
    spans x from low to high at each y = x), labelled vertical and horizontal lines."""

    def draw(ax) -> None:
        for i, (label, x, low, high) in enumerate(bands):
            fill = ax.fill_betweenx if horizontal else ax.fill_between
            fill(x, low, high, color=COLOURS[(i + 1) % 7], alpha=0.2, label=label, linewidth=0)
        for i, (label, x, y) in enumerate(curves):
            style = {"marker": "o", "markersize": 2.5, "linestyle": "none"} if markers else {}
            if step:
                ax.step(x, y, where="post", color=COLOURS[i % 7], label=label, linewidth=1.2)
            else:
                ax.plot(x, y, color=COLOURS[i % 7], label=label, linewidth=1.2, **style)
        for j, (label, x) in enumerate(vlines):
            ax.axvline(x, color=COLOURS[(j + 1) % 7], linestyle="--", linewidth=1, label=label)
        for j, (label, y) in enumerate(hlines):
            ax.axhline(y, color="#57606a", linestyle=(0, (4, 2 + j)), linewidth=1, label=label)

    return plot(draw, title, xlabel, ylabel, note)


def intervals(
    items: Sequence[tuple[str, float, float | None, float | None]],
    title: str,
    xlabel: str,
    *,
    reference: float | None = None,
    note: str | None = None,
) -> str:
    """A forest plot: one row per (label, estimate, low, high), reference line at ``reference``."""

    def draw(ax) -> None:
        ys = np.arange(len(items))[::-1]
        for y, (_label, est, lo, hi) in zip(ys, items, strict=True):
            if lo is not None and hi is not None and np.isfinite([lo, hi]).all():
                ax.plot([lo, hi], [y, y], color=COLOURS[0], linewidth=2)
            ax.plot([est], [y], "o", color=COLOURS[1], markersize=5)
        ax.set_yticks(ys, [label for label, *_ in items])
        if reference is not None:
            ax.axvline(reference, color="#57606a", linestyle="--", linewidth=1)

    height = 1.2 + 0.32 * len(items)
    return plot(draw, title, xlabel, "", note, height=min(height, 9.0))


def points(
    groups: Sequence[tuple[str, np.ndarray]],
    title: str,
    ylabel: str,
    *,
    marks: Sequence[tuple[int, float, str]] = (),
    hlines: Sequence[tuple[str, float]] = (),
    note: str | None = None,
    boxes: bool = False,
) -> str:
    """Values per group as jittered points (or boxes), with short horizontal ``marks`` (group
    index, value, legend label) such as each series' KPI bound."""
    rng = np.random.default_rng(0)

    def draw(ax) -> None:
        if boxes:
            ax.boxplot([np.asarray(v) for _, v in groups], showfliers=True, widths=0.5)
        else:
            for i, (_, v) in enumerate(groups):
                x = i + 1 + rng.uniform(-0.15, 0.15, np.size(v))
                ax.plot(x, v, "o", color=COLOURS[0], markersize=2.5, alpha=0.6)
        seen: set[str] = set()
        for g, value, label in marks:
            ax.hlines(
                value,
                g + 0.7,
                g + 1.3,
                color=COLOURS[1],
                linewidth=2,
                label=None if label in seen else label,
            )
            seen.add(label)
        for j, (label, y) in enumerate(hlines):
            ax.axhline(y, color=COLOURS[(j + 2) % 7], linestyle="--", linewidth=1, label=label)
        ax.set_xticks(np.arange(1, len(groups) + 1), [name for name, _ in groups])
        if len(groups) > 3:
            for tick in ax.get_xticklabels():
                tick.set(rotation=25, horizontalalignment="right", fontsize=7)

    return plot(draw, title, "", ylabel, note)


def bars(
    names: Sequence[str],
    values: Sequence[float],
    title: str,
    ylabel: str,
    *,
    errors: Sequence[float] | None = None,
    note: str | None = None,
) -> str:
    def draw(ax) -> None:
        x = np.arange(len(names))
        ax.bar(x, values, yerr=errors, color=COLOURS[0], capsize=3)
        ax.set_xticks(x, list(names))

    return plot(draw, title, "", ylabel, note)
