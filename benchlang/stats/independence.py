"""Independence test: weak stationarity (no trend) and no autocorrelation (TriScale §4.5).

TriScale (Jacob et al., JSys 1(1) 2021, §4.5) checks that metric values (before a KPI) and
KPIs (before a variability score) look i.i.d.: first weak stationarity, by its convergence
test at 50% confidence / 10% tolerance on data scaled by its own min and max, then the
sample autocorrelation against the per-lag 95% band 1.96/sqrt(N) at every lag up to N-1.
Read literally that rejects i.i.d. data most of the time (the band is per lag), and the
min/max scale rejects nearly every small i.i.d. sample. We keep the paper's intent with two
calibrated tests, each at level alpha/2 so that the family-wise level is alpha (Bonferroni):

- trend: Spearman's rank correlation between the values and their order (Daniels' test,
  Kendall & Gibbons, "Rank Correlation Methods", 1990, ch. 4). It is the rank analogue of
  the Theil-Sen slope test used for convergence (same asymptotic efficiency as the
  Mann-Kendall test the Theil-Sen CI inverts), scale free, and O(N log N). For N <= 10 the
  p-value is exact (the permutation distribution, :mod:`benchlang.stats.rank_exact`; the t
  approximation gives p = 0 for 5 monotone values, whose exact p is 0.0167), above it the
  t approximation with N - 2 degrees of freedom;
- autocorrelation: the Ljung-Box portmanteau test (Ljung & Box, Biometrika 65(2), 1978)
  over the first h = clip(round(ln N) - 2, 1, 10) lags of the sample ACF (Brockwell & Davis
  §1.4, the same estimator as statsmodels.tsa.stattools.acf).

The batch form tests many series at once (rows), so simulations stay vectorised.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.stats._orderstat import check_percent
from benchlang.stats._special import chi2_sf, rankdata, t_sf
from benchlang.stats.rank_exact import EXACT_MAX_N, spearman_trend_exact_p

MIN_N = 4


def ljung_box_lags(n: int) -> int:
    """Number of ACF lags tested for N values: round(ln N) - 2, between 1 and 10.

    ln N is the usual rule of thumb (Tsay, "Analysis of Financial Time Series", §2.2); we
    shift it down by two because few lags keep the portmanteau test powerful against
    short-memory dependence, where the signal sits at lag 1 (AR(1) with phi = 0.5 at N = 50
    is rejected 79% of the time with h = 2 but 72% with h = ln N; docs/statistics.md).
    """
    return int(min(10, max(1, min(n - 2, round(math.log(max(n, 2))) - 2))))


def _acf_rows(x: np.ndarray, nlags: int) -> np.ndarray:
    """Sample ACF at lags 1..nlags of each row (Brockwell & Davis Eq. 1.4.4)."""
    d = x - x.mean(axis=1, keepdims=True)
    denom = np.einsum("ij,ij->i", d, d)
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = (
            np.stack(
                [np.einsum("ij,ij->i", d[:, k:], d[:, :-k]) for k in range(1, nlags + 1)], axis=1
            )
            / denom[:, None]
        )
    return out


class IndependenceBatch(TypedDict):
    """``independence_batch``'s arrays (length R; ``acf`` R x ``lags``)."""

    passed: np.ndarray
    stationary: np.ndarray
    uncorrelated: np.ndarray
    trend_p: np.ndarray
    ljung_box_p: np.ndarray
    acf: np.ndarray
    lags: int


def independence_batch(x: np.ndarray, confidence: float = 95.0) -> IndependenceBatch:
    """Vectorised test of every row of ``x`` (R x N, no NaN); see the module docstring.

    Returns arrays of length R: passed, stationary, uncorrelated, trend_p, ljung_box_p and
    the (R x h) ACF. Rows with no variation pass (TriScale treats constant data as valid).
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    r, n = x.shape
    alpha = 1.0 - check_percent("confidence", confidence)
    if n < MIN_N:
        nan = np.full(r, np.nan)
        no = np.zeros(r, bool)
        return {
            "passed": no,
            "stationary": no,
            "uncorrelated": no,
            "trend_p": nan,
            "ljung_box_p": nan,
            "acf": np.empty((r, 0)),
            "lags": 0,
        }
    constant = np.ptp(x, axis=1) == 0
    ranks = rankdata(x, axis=1)
    t = np.arange(1, n + 1, dtype=float)
    rc = ranks - ranks.mean(axis=1, keepdims=True)
    tc = t - t.mean()
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = rc @ tc / np.sqrt(np.einsum("ij,ij->i", rc, rc) * (tc @ tc))
        stat = rho * np.sqrt((n - 2) / np.maximum(1.0 - rho**2, 1e-300))
    if n <= EXACT_MAX_N:
        trend_p = np.ones(r)
        if (~constant).any():
            trend_p[~constant] = spearman_trend_exact_p(x[~constant])
    else:
        trend_p = np.where(constant, 1.0, 2.0 * t_sf(np.abs(stat), n - 2))
    h = ljung_box_lags(n)
    acf = _acf_rows(x, h)
    k = np.arange(1, h + 1)
    q = n * (n + 2) * np.sum(acf**2 / (n - k), axis=1)
    lb_p = np.where(constant, 1.0, chi2_sf(q, h))
    acf = np.where(constant[:, None], 0.0, acf)
    stationary = trend_p > alpha / 2
    uncorrelated = lb_p > alpha / 2
    return {
        "passed": stationary & uncorrelated,
        "stationary": stationary,
        "uncorrelated": uncorrelated,
        "trend_p": trend_p,
        "ljung_box_p": lb_p,
        "acf": acf,
        "lags": h,
    }


@attrs.frozen
class Independence:
    """Verdict of the independence test on one sequence of values (TriScale §4.5)."""

    passed: bool
    stationary: bool
    uncorrelated: bool
    trend_p: float
    ljung_box_p: float
    acf: np.ndarray = attrs.field(eq=False, repr=False)
    lags: int
    n: int
    confidence: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; the p-values of a test that could not be made are null, with why."""
        return undefined(
            {
                "passed": self.passed,
                "stationary": self.stationary,
                "uncorrelated": self.uncorrelated,
                "trend_p": self.trend_p,
                "ljung_box_p": self.ljung_box_p,
                "acf": self.acf.tolist(),
                "lags": self.lags,
                "n": self.n,
                "confidence": self.confidence,
                "reason": self.reason,
            },
            {"*": self.reason or "not defined for these values"},
        )


def independence(values: np.ndarray, confidence: float = 95.0) -> Independence:
    """Do ``values`` (in trial or series order) look i.i.d.? TriScale §4.5, made sound.

    ``confidence`` is the family-wise level: i.i.d. data pass with probability about
    ``confidence`` % for any N >= 10 (see docs/statistics.md for the simulation table).
    NaN values are dropped; fewer than 4 values cannot be tested and do not pass.
    """
    x = np.asarray(values, dtype=float).ravel()
    return independence_rows(x[np.isfinite(x)][None, :], confidence)[0]


def independence_rows(x: np.ndarray, confidence: float = 95.0) -> list[Independence]:
    """``independence`` of every row of ``x`` (R x N, no NaN), tested together: the verdicts
    of a run's many series of equal length cost one vectorised test."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    res = independence_batch(x, confidence)
    n = x.shape[1]
    out = []
    for i in range(x.shape[0]):
        passed = bool(res["passed"][i])
        if n < MIN_N:
            reason = f"too few values to test independence ({n} < {MIN_N})"
        elif passed:
            reason = ""
        else:
            parts = []
            if not res["stationary"][i]:
                parts.append(f"trend (Spearman p = {res['trend_p'][i]:.3g})")
            if not res["uncorrelated"][i]:
                parts.append(f"autocorrelation (Ljung-Box p = {res['ljung_box_p'][i]:.3g})")
            reason = "not independent: " + " and ".join(parts)
        out.append(
            Independence(
                passed=passed,
                stationary=bool(res["stationary"][i]),
                uncorrelated=bool(res["uncorrelated"][i]),
                trend_p=float(res["trend_p"][i]),
                ljung_box_p=float(res["ljung_box_p"][i]),
                acf=res["acf"][i],
                lags=int(res["lags"]),
                n=int(n),
                confidence=float(confidence),
                reason=reason,
            )
        )
    return out
