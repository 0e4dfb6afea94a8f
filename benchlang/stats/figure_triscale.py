"""The numbers of TriScale's figures (Jacob et al., JSys 1(1) 2021), from the results
``stats.triscale``, ``stats.metric``, ``stats.cdf`` and ``stats.profile`` already compute.

Fig. 1b (``kpi-scatter``), 3a (``convergence``), 3b (``series-kpis``), 3c and 8
(``variability``), 7 (``cdf``), 10 (``cdf-overlay``) and 5 (``profile``); docs/figures.md.
Rows are long format: ``(configuration, part, x, y, low, high)`` unless said otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np

from benchlang.stats.figure_data import FigureData, ecdf
from benchlang.stats.metric import Metric, window_starts
from benchlang.stats.triscale import MetricAnalysis

if TYPE_CHECKING:  # stats.profile imports scipy.signal and statsmodels (2 s): not for a CDF
    from benchlang.stats.profile import Profile

PAPER = "TriScale (Jacob et al., JSys 2021)"
COLUMNS = ("configuration", "part", "x", "y", "low", "high")
MAX_POINTS = 2000
"""Samples of a raw series drawn per configuration; beyond it, evenly spaced (the figure and its
``notes`` say so; the statistics use every value)."""
CDF_POINTS = 300
"""Values of an empirical CDF drawn per configuration, evenly spaced in rank (the step curve
looks the same; the band and the statistics use every value)."""
TRIAL_POINTS = 300
"""Trials drawn per configuration in ``series-kpis``, evenly spaced in plan order (every
series keeps its share; every series' KPI is drawn)."""
BAND_WORK = 200_000
"""Percentiles x values a CDF band evaluates (its cost, as in the report's timescales); beyond
it the band is computed at every k-th percentile, and the notes say so."""
NAN = float("nan")


def spaced(n: int, most: int = MAX_POINTS) -> np.ndarray:
    """At most ``most`` evenly spaced indices of ``n`` items, the first and last kept."""
    if n <= most:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, most)).astype(np.int64))


def _kpi_words(analyses: Sequence[MetricAnalysis]) -> str:
    for a in analyses:
        for s in a.series:
            k = s.kpi
            return f"the {k.bound} bound of the p{k.percentile:g} at {k.confidence:g}% confidence"
    return "the KPI"


def _descriptive(labels: Sequence[str], analyses: Sequence[MetricAnalysis]) -> tuple[str, ...]:
    return tuple(
        f"{label}: descriptive only ({'; '.join(a.reasons)})"
        for label, a in zip(labels, analyses, strict=True)
        if a.descriptive_only
    )


def kpi_scatter(
    labels: Sequence[str],
    analyses_x: Sequence[MetricAnalysis],
    analyses_y: Sequence[MetricAnalysis],
    metrics: tuple[str, str],
    units: tuple[str, str],
) -> FigureData:
    """Fig. 1b: each configuration's KPI of one metric against its KPI of another.

    A point per series (the two KPIs of the same series), and per configuration the median of
    its series' KPIs with the variability interval (§4.3) of each metric as bars, when scored.
    """
    columns = ("configuration", "part", "x", "y", "x_low", "x_high", "y_low", "y_high")
    rows: list[tuple] = []
    for label, ax, ay in zip(labels, analyses_x, analyses_y, strict=True):
        kx = {s.series: s.kpi.value if s.kpi.enough else NAN for s in ax.series}
        ky = {s.series: s.kpi.value if s.kpi.enough else NAN for s in ay.series}
        both = sorted(set(kx) & set(ky))
        rows += [(label, f"series {s}", kx[s], ky[s], NAN, NAN, NAN, NAN) for s in both]
        bx = _bounds(ax)
        by = _bounds(ay)
        centre_x = float(np.nanmedian([kx[s] for s in both])) if both else NAN
        centre_y = float(np.nanmedian([ky[s] for s in both])) if both else NAN
        rows.append((label, "configuration", centre_x, centre_y, *bx, *by))
    bars = any(np.isfinite(r[4]) for r in rows if r[1] == "configuration")
    caption = (
        f"{metrics[1]} against {metrics[0]}: for each configuration, one small point per "
        f"series at its two KPIs ({_kpi_words(analyses_x)}), a large point at the median of "
        "its series' KPIs"
        + (", bars: each metric's variability interval across series (§4.3)" if bars else "")
        + f". After {PAPER} Fig. 1b."
    )
    return FigureData(
        "kpi-scatter",
        f"{PAPER} Fig. 1b",
        caption,
        columns,
        rows,
        _descriptive(labels, analyses_x) + _descriptive(labels, analyses_y),
        {"x_label": f"{metrics[0]} KPI ({units[0]})", "y_label": f"{metrics[1]} KPI ({units[1]})"},
    )


def _bounds(a: MetricAnalysis) -> tuple[float, float]:
    v = a.variability
    if v is None or not v.enough:
        return NAN, NAN
    return float(v.lower), float(v.upper)


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
    rows: list[tuple] = []
    left: list[str] = []
    tested = False
    for label, x, result in zip(labels, samples, results, strict=True):
        part = convergence_rows(np.asarray(x, dtype=float), result)
        rows += [(label, *r) for r in part]
        kept = sum(1 for r in part if r[0] == "sample")
        total = int(np.isfinite(np.asarray(x, dtype=float)).sum())
        if kept < total:
            left.append(f"{label}: {kept:,} of {total:,} samples drawn, evenly spaced")
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
        },
    )


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


def convergence_rows(x: np.ndarray, result: Metric) -> list[tuple]:
    """``(part, x, y, low, high)`` of one raw series: samples, windows, slope, band."""
    finite = x[np.isfinite(x)]
    keep = spaced(finite.size)
    rows: list[tuple] = [("sample", float(i), float(finite[i]), NAN, NAN) for i in keep]
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


def series_kpis(
    labels: Sequence[str],
    values: Sequence[np.ndarray],
    series: Sequence[np.ndarray],
    analyses: Sequence[MetricAnalysis],
    metric: str,
    unit: str,
) -> FigureData:
    """Fig. 3b: every trial's metric value per series, and each series' KPI (§4.2)."""
    rows: list[tuple] = []
    thinned: list[str] = []
    for label, v, s, a in zip(labels, values, series, analyses, strict=True):
        v = np.asarray(v, dtype=float)
        ok = np.isfinite(v)
        keep = spaced(int(ok.sum()), TRIAL_POINTS)
        rows += [
            (label, "trial", float(si), float(vi), NAN, NAN)
            for si, vi in zip(np.asarray(s)[ok][keep], v[ok][keep], strict=True)
        ]
        if keep.size < ok.sum():
            thinned.append(
                f"{label}: {keep.size:,} of {int(ok.sum()):,} trials drawn, evenly spaced"
            )
        rows += [
            (label, "KPI", float(k.series), k.kpi.value if k.kpi.enough else NAN, NAN, NAN)
            for k in a.series
        ]
    short = [
        f"{label} series {k.series}: KPI needs {k.kpi.min_n} trials, {k.kpi.n} ran"
        for label, a in zip(labels, analyses, strict=True)
        for k in a.series
        if not k.kpi.enough
    ]
    caption = (
        f"{metric} of every trial (small points) in each series, and each series' KPI "
        f"({_kpi_words(analyses)}, large marker), configurations side by side, series left "
        f"to right within each. After {PAPER} Fig. 3b."
    )
    return FigureData(
        "series-kpis",
        f"{PAPER} Fig. 3b",
        caption,
        COLUMNS,
        rows,
        tuple(thinned) + tuple(short) + _descriptive(labels, analyses),
        {"x_label": "configuration, series", "y_label": f"{metric} ({unit})"},
    )


def variability(
    labels: Sequence[str], analyses: Sequence[MetricAnalysis], metric: str, unit: str
) -> FigureData:
    """Figs. 3c and 8: the series KPIs of each configuration side by side with the
    variability interval (the two percentile bounds of §4.3) around them."""
    rows: list[tuple] = []
    left: list[str] = []
    words = "the variability interval"
    for label, a in zip(labels, analyses, strict=True):
        rows += [
            (label, "series KPI", float(k.series), k.kpi.value if k.kpi.enough else NAN, NAN, NAN)
            for k in a.series
        ]
        v = a.variability
        if v is not None and v.enough:
            rows.append((label, "variability", NAN, float(v.score), float(v.lower), float(v.upper)))
            words = (
                f"the variability interval: lower bound of the p{v.percentile_low:g}, upper "
                f"bound of the p{v.percentile_high:g} of the series KPIs, jointly at "
                f"{v.joint_confidence:.4g}%"
            )
        elif v is not None:
            left.append(f"{label}: variability needs {v.min_n} series, {v.n} ran")
    caption = (
        f"Series KPIs of {metric} ({_kpi_words(analyses)}) per configuration, with {words} "
        f"(§4.3). After {PAPER} Figs. 3c and 8."
    )
    return FigureData(
        "variability",
        f"{PAPER} Figs. 3c, 8",
        caption,
        COLUMNS,
        rows,
        tuple(left) + _descriptive(labels, analyses),
        {"x_label": "configuration", "y_label": f"{metric} KPI ({unit})"},
    )


def cdf(
    labels: Sequence[str],
    values: Sequence[np.ndarray],
    confidence: float,
    metric: str,
    unit: str,
    overlay: bool = False,
) -> FigureData:
    """Fig. 7 (each configuration's empirical CDF and its band) or Fig. 10 (``overlay``: the
    bands of all configurations on shared axes). The band bounds every percentile 2..98 at
    ``confidence``, each on its own (pointwise, §5.4, ``stats.cdf.cdf_band``)."""
    from benchlang.stats.cdf import cdf_band

    rows: list[tuple] = []
    left: list[str] = []
    for label, v in zip(labels, values, strict=True):
        x, p = ecdf(v)
        keep = spaced(x.size, CDF_POINTS)
        if not overlay:
            rows += [(label, "trial", float(x[i]), float(p[i]), NAN, NAN) for i in keep]
            if keep.size < x.size:
                left.append(f"{label}: {keep.size:,} of {x.size:,} values drawn, evenly spaced")
        step = max(1, -(-97 * x.size // BAND_WORK))
        band = cdf_band(x, np.arange(2.0, 99.0, step), confidence=confidence)
        if step > 1:
            left.append(f"{label}: band at every {step}th percentile ({x.size:,} values)")
        ok = np.isfinite(band.lower) & np.isfinite(band.upper)
        rows += [
            (label, "band", NAN, float(q) / 100.0, float(lo), float(hi))
            for q, lo, hi in zip(band.percentiles[ok], band.lower[ok], band.upper[ok], strict=True)
        ]
        if not ok.any():
            left.append(f"{label}: {x.size} values bound no percentile at {confidence:g}%")
        elif not ok.all():
            left.append(
                f"{label}: band of percentiles {band.percentiles[ok][0]:g}-"
                f"{band.percentiles[ok][-1]:g} only ({x.size} values)"
            )
    what = (
        f"the {confidence:g}% confidence bands of the CDF of {metric}, all configurations on "
        "shared axes"
        if overlay
        else f"the empirical CDF of {metric} per configuration with its {confidence:g}% band"
    )
    figure = "Fig. 10" if overlay else "Fig. 7"
    caption = (
        f"{what[0].upper()}{what[1:]}: each percentile from 2 to 98 bounded below and above "
        f"at {confidence:g}% on its own (pointwise, §5.4). After {PAPER} {figure}."
    )
    return FigureData(
        "cdf-overlay" if overlay else "cdf",
        f"{PAPER} {figure}",
        caption,
        COLUMNS,
        rows,
        tuple(left),
        {"x_label": f"{metric} ({unit})", "y_label": "fraction of trials"},
    )


def profile(name: str, result: Profile, lag_text: Sequence[str]) -> FigureData:
    """Fig. 5: the autocorrelation of the condition data by lag, the significance threshold,
    the peaks and the seasonal periods found (§4.6). ``lag_text`` names every lag as the
    ``profile`` command prints it (e.g. "1w")."""
    acf = np.asarray(result.acf, dtype=float)
    threshold = np.asarray(result.threshold, dtype=float)
    peaks, periods = set(result.peaks), set(result.periods)
    rows = [
        (
            int(lag),
            lag_text[lag],
            float(lag * result.period),
            acf[lag],
            threshold[lag],
            lag in peaks,
            lag in periods,
        )
        for lag in range(1, acf.size)
    ]
    found = ", ".join(lag_text[p] for p in result.periods) or "none"
    caption = (
        f"Autocorrelation of {name} ({result.n} samples every {lag_text[1]}) by lag, with the "
        f"band outside which it is significant; peaks marked, seasonal periods found: {found}. "
        f"After {PAPER} Fig. 5."
    )
    left = (f"{result.missing} missing samples",) if result.missing else ()
    return FigureData(
        "profile",
        f"{PAPER} Fig. 5",
        caption,
        ("lag", "lag_text", "lag_seconds", "acf", "threshold", "peak", "period"),
        rows,
        left,
        {"x_label": "lag", "y_label": "autocorrelation", "name": name},
    )
