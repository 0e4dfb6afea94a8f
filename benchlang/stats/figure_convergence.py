"""The numbers of TriScale's convergence figure (Jacob et al., JSys 1(1) 2021, Fig. 3a,
``convergence``): one trial's raw series, the metric over sliding windows, the Theil–Sen slope
and the tolerance band of the convergence test (§4.1, ``stats.metric``); docs/figures.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.stats.figure_data import NAN, FigureData, spaced
from benchlang.stats.metric import Metric, window_starts

PAPER = "TriScale (Jacob et al., JSys 2021)"
COLUMNS = ("configuration", "part", "x", "y", "low", "high")


def convergence(
    labels: Sequence[str],
    samples: Sequence[np.ndarray],
    results: Sequence[Metric],
    metric: str,
    unit: str,
) -> FigureData:
    """Fig. 3a: one trial's raw series per configuration, the metric over sliding windows,
    the Theil-Sen slope and the ±tolerance band of the convergence test (§4.1).

    The slope and band are drawn in the data's units: the test scales values by the series'
    range and window centres to [-1, 1] (``stats.metric.convergence_test``), undone here.
    """
    rows: list[tuple[Any, ...]] = []
    left: list[str] = []
    views: dict[str, list[float]] = {}
    tested = False
    for label, x, result in zip(labels, samples, results, strict=True):
        part = convergence_rows(np.asarray(x, dtype=float), result)
        rows += [(label, *r) for r in part]
        kept = sum(1 for r in part if r[0] == "sample")
        total = int(np.isfinite(np.asarray(x, dtype=float)).sum())
        if kept < total:
            left.append(f"{label}: {kept:,} of {total:,} samples drawn, evenly spaced")
        drawn = np.array([r[2] for r in part if r[0] == "sample"], dtype=float)
        lines = np.array([v for r in part if r[0] != "sample" for v in r[2:]], dtype=float)
        view = far_outside(drawn, lines)
        if view is not None:
            views[label] = [view.low, view.high]
            k = view.below + view.above
            values = (
                _number(view.lowest)
                if k == 1
                else f"{_number(view.lowest)} to {_number(view.highest)}"
            )
            left.append(
                f"{label}: {k:,} far sample{'s' if k > 1 else ''} outside the drawn range "
                f"({values} {unit}), marked by a triangle at its edge"
            )
        tested |= bool(result.windows)
    tol = next((r.tolerance for r in results if r.tolerance is not None), None)
    conf = next((r.confidence for r in results if r.confidence is not None), None)
    lengths = {r.window_length for r in results if r.windows}
    windows = (
        f"windows of {lengths.pop():,} samples" if len(lengths) == 1 else "windows of half a series"
    )
    window_label = f"{measure_words(results[0].measure)} over {windows}" if results else ""
    verdicts = {
        label: "not tested"
        if r.converged is None
        else "converged"
        if r.converged
        else "did NOT converge"
        for label, r in zip(labels, results, strict=True)
    }
    caption = (
        f"Raw series of {metric} of one trial per configuration (the first successful one) "
        + (
            f"with the metric over sliding windows of half the series, the Theil–Sen slope and "
            f"the ±{tol:g}% tolerance band; converged when the slope's {conf:g}% confidence "
            "interval lies within the band (§4.1)"
            if tested and tol is not None and conf is not None
            else "(the spec asks for no convergence test)"
        )
        + f". After {PAPER} Fig. 3a."
    )
    return FigureData(
        "convergence",
        f"{PAPER} Fig. 3a",
        caption,
        COLUMNS,
        rows,
        tuple(left),
        {
            "x_label": "sample",
            "y_label": f"{metric} ({unit})",
            "window_label": window_label,
            "verdicts": verdicts,
            "y_view": views,
        },
    )


@attrs.frozen
class View:
    """The y range a panel draws when far samples would flatten it, and what it leaves out."""

    low: float
    high: float
    below: int
    above: int
    lowest: float
    highest: float


def far_outside(samples: np.ndarray, lines: np.ndarray, reach: float = 1.0) -> View | None:
    """None when every sample fits the panel; else the range that keeps its bulk readable.

    The bulk is the samples' 0.5-99.5 percentile range joined with the test's lines
    (``lines``: windows, slope, band); a sample more than ``reach`` times that width beyond
    it is far, a gross outlier in the sense of Tukey's far-out values (Exploratory Data
    Analysis, 1977, §2.4), whose place on a shared linear scale would squeeze the rest into a
    line. The view is every other sample and line, with a 5% margin."""
    y = samples[np.isfinite(samples)]
    if y.size < 3:
        return None
    ends = [*np.percentile(y, [0.5, 99.5]), *lines[np.isfinite(lines)]]
    lo, hi = float(min(ends)), float(max(ends))
    width = hi - lo
    if width <= 0:
        return None
    far = (y < lo - reach * width) | (y > hi + reach * width)
    if not far.any():
        return None
    rest = [*y[~far], *lines[np.isfinite(lines)]]
    low, high = float(min(rest)), float(max(rest))
    margin = 0.05 * (high - low)
    return View(
        low - margin,
        high + margin,
        int((y < lo - reach * width).sum()),
        int((y > hi + reach * width).sum()),
        float(y[far].min()),
        float(y[far].max()),
    )


def _number(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def measure_words(measure: str | float) -> str:
    """A metric's measure as words: "95th percentile", "mean" (never "95.0")."""
    if isinstance(measure, str):
        return measure
    n = f"{measure:g}"
    last = int(measure) % 10 if float(measure).is_integer() else -1
    teen = 10 <= int(measure) % 100 <= 20
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(last, "th") if not teen else "th"
    return f"{n}{suffix} percentile"


@attrs.frozen
class ConvergenceLines:
    """What the convergence test of one raw series looks like in the data's units (§4.1):
    the window centres and the metric over each window, the Theil–Sen slope's two ends and the
    ±tolerance band at the first centre, the middle one and the last (zero width mid-run)."""

    window_length: int
    centres: np.ndarray
    values: np.ndarray
    slope_x: np.ndarray
    slope_y: np.ndarray
    band_x: np.ndarray
    band_low: np.ndarray
    band_high: np.ndarray


def convergence_lines(x: np.ndarray, result: Metric) -> ConvergenceLines | None:
    """The test's lines of ``result`` (``stats.metric.metric`` of ``x``), None without a test.

    The test scales values by the trimmed series' range and centres to [-1, 1]
    (``stats.metric.convergence_test``); the slope and band are scaled back here."""
    if not result.windows:
        return None
    finite = x[np.isfinite(x)]
    starts, w = window_starts(result.n)
    centres = result.trimmed + starts + (w - 1) / 2.0
    vals = np.asarray(result.window_values, dtype=float)
    kept = finite[result.trimmed :]
    span = centres[-1] - centres[0] if centres.size > 1 else 1.0
    scale = (kept.max() - kept.min()) / span if span else 0.0
    mid_x, mid_y = float(np.median(centres)), float(np.median(vals))
    ends = np.array([centres[0], centres[-1]])
    at = np.array([centres[0], mid_x, centres[-1]])
    width = (result.tolerance or 0.0) / 100.0 * scale * np.abs(at - mid_x)
    return ConvergenceLines(
        w,
        centres,
        vals,
        ends,
        mid_y + result.slope * scale * (ends - mid_x),
        at,
        mid_y - width,
        mid_y + width,
    )


def convergence_rows(x: np.ndarray, result: Metric) -> list[tuple[Any, ...]]:
    """``(part, x, y, low, high)`` of one raw series: samples, windows, slope, band."""
    finite = x[np.isfinite(x)]
    keep = spaced(finite.size)
    rows: list[tuple[Any, ...]] = [("sample", float(i), float(finite[i]), NAN, NAN) for i in keep]
    lines = convergence_lines(x, result)
    if lines is None:
        return rows
    rows += [
        ("window", float(c), float(v), NAN, NAN)
        for c, v in zip(lines.centres, lines.values, strict=True)
    ]
    rows += [
        ("slope", float(a), float(b), NAN, NAN)
        for a, b in zip(lines.slope_x, lines.slope_y, strict=True)
    ]
    mid = float(np.median(lines.values))
    rows += [
        ("tolerance", float(a), mid, float(lo), float(hi))
        for a, lo, hi in zip(lines.band_x, lines.band_low, lines.band_high, strict=True)
    ]
    return rows
