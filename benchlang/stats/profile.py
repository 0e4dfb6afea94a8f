"""Network profiling: seasonal components of regularly sampled condition data (TriScale §4.6).

Source: Jacob et al., JSys 1(1) 2021, §4.6 (and Fig. 6: the autocorrelation of link quality
shows daily and weekly peaks). Sample ACF by statsmodels.tsa.stattools.acf (adjusted, i.e.
divided by N - k, so that a longer period's peak is not shrunk by the lag), i.i.d. band
z/sqrt(N - k) (Brockwell & Davis §1.4) with z Bonferroni-corrected over the lags examined;
peaks by scipy.signal.find_peaks.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np
from scipy.signal import find_peaks
from scipy.stats import norm
from statsmodels.tsa.stattools import acf as sm_acf

from benchlang.stats.independence import Independence, independence

MIN_N = 8


@attrs.frozen
class Profile:
    """ACF of the condition data, its significant peaks and the seasonal periods found.

    Lags are in samples; ``period`` is the sampling period in seconds. ``periods`` are the
    lags taken as seasonal components and ``recommended_span`` (seconds) the series span
    TriScale recommends (the longest period), None when no seasonal component shows.
    """

    acf: np.ndarray = attrs.field(eq=False, repr=False)
    band: float
    threshold: np.ndarray = attrs.field(eq=False, repr=False)
    peaks: tuple[int, ...]
    peak_acf: tuple[float, ...]
    periods: tuple[int, ...]
    period: float
    recommended_span: float | None
    n: int
    missing: int
    independence: Independence

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "missing": self.missing,
            "period_seconds": self.period,
            "band": self.band,
            "peaks": list(self.peaks),
            "peak_acf": list(self.peak_acf),
            "periods": list(self.periods),
            "periods_seconds": [p * self.period for p in self.periods],
            "recommended_span_seconds": self.recommended_span,
            "independent": self.independence.passed,
        }


def profile(values: np.ndarray, period: float = 1.0, max_lag: int | None = None) -> Profile:
    """Profile condition data sampled every ``period`` seconds (TriScale §4.6).

    Missing samples are replaced by the median (as TriScale does) so the sampling stays
    regular. The ACF is computed up to ``max_lag`` (default N/3, so that a period shows at
    least three times); peaks are local maxima at lags >= 2 above z/sqrt(N - k), z the
    Bonferroni 95% quantile over all lags examined (so i.i.d. data show no peak in 95% of
    cases). A peak is taken as a new seasonal period when its ACF exceeds every earlier
    peak by 3/4 of the per-lag band 1.96/sqrt(N) (tuned by simulation, docs/statistics.md):
    multiples of a period repeat its peak at about the same height, whereas a longer component
    (weekly over daily) adds to it. The recommended span is the longest period found.
    """
    if not period > 0:
        raise ValueError(f"period must be > 0 seconds, got {period!r}")
    x = np.asarray(values, dtype=float).ravel()
    missing = int(np.count_nonzero(~np.isfinite(x)))
    if x.size - missing < MIN_N:
        raise ValueError(f"profiling needs at least {MIN_N} samples, got {x.size - missing}")
    x = np.where(np.isfinite(x), x, np.nanmedian(x))
    n = int(x.size)
    lags = n // 3 if max_lag is None else int(min(max_lag, n - 1))
    if np.ptp(x) == 0:
        r = np.concatenate([[1.0], np.zeros(lags)])
    else:
        r = sm_acf(x, nlags=lags, fft=True, adjusted=True)
    band = 1.96 / math.sqrt(n)
    z = norm.isf(0.05 / (2 * max(lags, 1)))
    threshold = z / np.sqrt(n - np.arange(lags + 1))
    idx, _ = find_peaks(r)
    idx = idx[(idx >= 2) & (r[idx] > threshold[idx])]
    periods: list[int] = []
    best = -math.inf
    for lag in idx:
        if r[lag] > best + 0.75 * band:
            periods.append(int(lag))
            best = float(r[lag])
    return Profile(
        acf=r,
        band=band,
        threshold=threshold,
        peaks=tuple(int(i) for i in idx),
        peak_acf=tuple(float(r[i]) for i in idx),
        periods=tuple(periods),
        period=float(period),
        recommended_span=float(max(periods) * period) if periods else None,
        n=n,
        missing=missing,
        independence=independence(x),
    )
