"""In-process measures of bench_figures.py (issue 36): each figure's build and drawing CPU, and
the panels' floor, the same figure drawn with its data marks removed after its drawer ran.

The skeleton keeps what a panel costs matplotlib whatever the data (frames, ticks, tick labels,
axis labels, titles, legends, the notes, the constrained layout): the drawer runs as the report
runs it, then every axes loses its ``lines``, ``collections``, ``patches`` and ``images``; the
data limits stay, so the ticks are those of the full figure. Its total is what the papers'
panels cost in matplotlib before a single value is drawn.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs


@attrs.frozen
class Drawn:
    """One figure drawn in process: CPU seconds to build its numbers, to draw it as SVG (the
    report's) and as PDF."""

    name: str
    build: float
    svg: float
    pdf: float


@attrs.frozen
class Panels:
    """One figure's panels' floor: its axes, and the CPU seconds (median of the repeats) of its
    SVG as the report draws it and of the same figure without its data marks."""

    name: str
    axes: int
    full: float
    skeleton: float


def _prepared(store: Path) -> tuple[Any, Any]:
    """(the store's figure inputs, its palette), matplotlib and its SVG and PDF backends
    imported by one drawing first (their import is counted in the commands, not here)."""
    import matplotlib.figure  # noqa: F401

    from benchlang.app.report import report_inputs
    from benchlang.report.figures import NotApplicable, labels, registry
    from benchlang.report.figures.render import Palette, draw

    inputs = report_inputs(store, with_headline=False)
    palette = Palette(labels(inputs))
    for kind in registry().values():
        try:
            data = kind.build(inputs, None)
        except NotApplicable:
            continue
        for fmt in ("svg", "pdf"):
            draw(data, kind.draw, palette, fmt)
        break
    return inputs, palette


def in_process(store: Path) -> list[Drawn]:
    """Every applicable figure in the report's order, after the inputs are gathered once (what
    figures share, ``report.figures.shared``, is counted in the first that builds it)."""
    from benchlang.app.report import report_inputs
    from benchlang.report.figures import NotApplicable, registry
    from benchlang.report.figures.render import draw

    _inputs, palette = _prepared(store)
    inputs = report_inputs(store, with_headline=False)  # nothing built yet, as in a report
    inputs.kpis, inputs.order  # noqa: B018 (computed once, as the report does)
    out = []
    for name, kind in registry().items():
        start = time.process_time()
        try:
            data = kind.build(inputs, None)
        except NotApplicable:
            continue
        built = time.process_time()
        draw(data, kind.draw, palette, "svg")
        svg = time.process_time()
        draw(data, kind.draw, palette, "pdf")
        out.append(Drawn(name, built - start, svg - built, time.process_time() - svg))
    return out


def skeleton_of(drawer: Callable, axes: list[int]) -> Callable:
    """``drawer``, then every data mark of the figure removed; appends its number of axes."""

    def drawn(fig: Any, data: Any, palette: Any, paper: bool) -> None:
        drawer(fig, data, palette, paper)
        axes.append(len(fig.axes))
        for ax in fig.axes:
            for mark in (*ax.lines, *ax.collections, *ax.patches, *ax.images):
                mark.remove()

    return drawn


def panels_floor(store: Path, repeat: int) -> list[Panels]:
    """Every applicable figure as SVG (``render.draw`` as the report calls it) and its
    skeleton, after one untimed drawing of each (matplotlib's text-extent cache warm for both),
    interleaved ``repeat`` times, the order swapped each time; medians of CPU seconds."""
    from benchlang.report.figures import NotApplicable, registry
    from benchlang.report.figures.render import draw

    inputs, palette = _prepared(store)
    built = []
    for name, kind in registry().items():
        try:
            built.append((name, kind, kind.build(inputs, None)))
        except NotApplicable:
            continue
    out = []
    for name, kind, data in built:
        axes: list[int] = []
        drawers = {"full": kind.draw, "skeleton": skeleton_of(kind.draw, axes)}
        for drawer in drawers.values():
            draw(data, drawer, palette, "svg")
        cpu: dict[str, list[float]] = {key: [] for key in drawers}
        for i in range(max(1, repeat)):
            for key in sorted(drawers, reverse=bool(i % 2)):
                start = time.process_time()
                draw(data, drawers[key], palette, "svg")
                cpu[key].append(time.process_time() - start)
        full, bare = (statistics.median(cpu[key]) for key in drawers)
        out.append(Panels(name, axes[0], full, bare))
    return out
