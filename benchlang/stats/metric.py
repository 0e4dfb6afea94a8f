"""A trial's metric from its raw series, with TriScale's convergence test (§4.1, §4.5).

Source: Jacob et al., JSys 1(1) 2021, §4.1 (metrics and convergence, Fig. 4) and §4.5
(Theil-Sen slope CI; Theil 1950, Sen 1968 via scipy.stats.theilslopes).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.stats._orderstat import check_percent
from benchlang.stats._windows import window_extreme, window_mean, window_percentile

MAX_WINDOWS = 100
MEASURES = ("mean", "median", "min", "max")


@attrs.frozen
class Metric:
    """One trial's metric. ``value`` is nan when convergence was expected but not reached.

    ``converged`` is None when not tested. ``slope`` and ``slope_ci`` are the Theil-Sen
    slope and its CI on the [-1, 1]-scaled windows; ``window_values`` the windowed metric.
    """

    value: float
    converged: bool | None
    slope: float
    slope_ci: tuple[float, float]
    measure: str | float
    n: int
    trimmed: int
    windows: int
    window_length: int
    confidence: float | None
    tolerance: float | None
    window_values: np.ndarray = attrs.field(eq=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "converged": self.converged,
            "slope": self.slope,
            "slope_ci": list(self.slope_ci),
            "measure": self.measure,
            "n": self.n,
            "trimmed": self.trimmed,
            "windows": self.windows,
            "window_length": self.window_length,
            "confidence": self.confidence,
            "tolerance": self.tolerance,
        }


def parse_measure(measure: str | float) -> str | float:
    """ "mean", "min", "max", or a percentile in (0, 100) ("median" is 50)."""
    if isinstance(measure, str):
        m = measure.strip().lower()
        if m == "median":
            return 50.0
        if m in MEASURES:
            return m
        try:
            measure = float(m.removeprefix("p").rstrip("%"))
        except ValueError:
            raise ValueError(
                f"unknown measure {measure!r}: use mean, median, min, max or a percentile"
            ) from None
    if isinstance(measure, bool):
        raise ValueError(f"unknown measure {measure!r}")
    check_percent("measure percentile", measure)
    return float(measure)


def trim_count(n: int, trim: float | int) -> int:
    """Leading samples to drop: an int is a count, a float in [0, 1) a fraction of n."""
    if isinstance(trim, bool):
        raise ValueError(f"trim must be a fraction in [0, 1) or a sample count, got {trim!r}")
    if isinstance(trim, (int, np.integer)):
        if trim < 0:
            raise ValueError(f"trim count must be >= 0, got {trim!r}")
        return min(int(trim), n)
    t = float(trim)
    if not 0.0 <= t < 1.0:
        raise ValueError(f"trim fraction must lie in [0, 1), got {trim!r}")
    return math.floor(t * n)


def _reduce(x: np.ndarray, measure: str | float) -> float:
    if measure == "mean":
        return float(np.mean(x))
    if measure == "min":
        return float(np.min(x))
    if measure == "max":
        return float(np.max(x))
    return float(np.percentile(x, float(measure)))


def window_starts(n: int) -> tuple[np.ndarray, int]:
    """Windows of half the data (ceil(n/2), so odd n loses nothing), at most 100 of them.

    The first starts at 0 and the last ends at n; starts are evenly spread in between, a
    step of about 1/100 of the window length (TriScale's code: windows of n/2 moved by
    n/200), fewer windows for short runs (one per possible start).
    """
    w = -(-n // 2)
    k = min(MAX_WINDOWS, n - w + 1)
    return np.round(np.linspace(0, n - w, k)).astype(np.int64), w


def windowed(x: np.ndarray, measure: str | float) -> tuple[np.ndarray, np.ndarray, int]:
    """The metric over every window (vectorised), with the window starts and length."""
    starts, w = window_starts(x.size)
    if measure == "mean":
        vals = window_mean(x, starts, w)
    elif measure in ("min", "max"):
        vals = window_extreme(x, starts, w, measure)
    else:
        vals = window_percentile(x, starts, w, float(measure))
    return vals, starts, w


def convergence_test(
    window_values: np.ndarray,
    centres: np.ndarray,
    value_range: tuple[float, float],
    confidence: float,
    tolerance: float,
) -> tuple[bool, float, tuple[float, float]]:
    """TriScale's convergence test (§4.1, §4.5): Theil-Sen slope CI within ±tolerance.

    Window centres and values are scaled to [-1, 1]; values by ``value_range`` (the raw
    series' min and max, TriScale's default bounds), so the tolerance is a fraction of the
    data's range per half run. ``confidence`` and ``tolerance`` are percents.
    """
    from scipy.stats import theilslopes  # lazily: scipy.stats costs every command ~0.5 s

    lo, hi = value_range
    if hi == lo or window_values.size < 2:
        return hi == lo, 0.0, (0.0, 0.0)
    xs = 2.0 * (centres - centres[0]) / (centres[-1] - centres[0]) - 1.0
    ys = (2.0 * window_values - (lo + hi)) / (hi - lo)
    res = theilslopes(ys, xs, alpha=confidence / 100.0)
    tol = tolerance / 100.0
    ci = (float(res.low_slope), float(res.high_slope))
    return bool(-tol <= ci[0] and ci[1] <= tol), float(res.slope), ci


def metric(
    series: np.ndarray,
    measure: str | float,
    convergence: tuple[float, float] | None = None,
    trim: float | int = 0,
) -> Metric:
    """The metric of one trial's raw series (TriScale §4.1).

    Without ``convergence`` this is the measure over the (trimmed) series. With
    ``convergence`` = (confidence, tolerance) in percent (TriScale's defaults: 95, 5), the
    measure is computed over sliding windows of half the data (see ``window_starts``); the
    trial converged when the Theil-Sen slope CI of the scaled window values lies inside
    ±tolerance, and its metric is then the median of the window values, else nan.
    Percentiles use numpy's default linear interpolation (Hyndman-Fan type 7). ``trim``
    drops a leading fraction or number of samples first (the remedy of §4.1, Fig. 4).
    NaN samples are dropped.
    """
    m = parse_measure(measure)
    x = np.asarray(series, dtype=float).ravel()
    x = x[np.isfinite(x)]
    cut = trim_count(x.size, trim)
    x = x[cut:]
    n = int(x.size)
    empty = np.empty(0)
    nan2 = (math.nan, math.nan)
    if convergence is None:
        value = _reduce(x, m) if n else math.nan
        return Metric(value, None, math.nan, nan2, m, n, cut, 0, n, None, None, empty)
    conf, tol = (float(v) for v in convergence)
    check_percent("convergence confidence", conf)
    if tol <= 0:
        raise ValueError(f"convergence tolerance must be > 0, got {tol!r}")
    if n < 2:
        return Metric(math.nan, False, math.nan, nan2, m, n, cut, 0, n, conf, tol, empty)
    vals, starts, w = windowed(x, m)
    ok, slope, ci = convergence_test(vals, starts + (w - 1) / 2.0, (x.min(), x.max()), conf, tol)
    value = float(np.median(vals)) if ok else math.nan
    return Metric(value, ok, slope, ci, m, n, cut, int(vals.size), w, conf, tol, vals)
