"""A bootstrap confidence bound of a percentile: the KPI by resampling, percentile or BCa.

Sources: Efron, "Better bootstrap confidence intervals", JASA 82(397), 1987 (BCa);
Efron & Tibshirani, An Introduction to the Bootstrap, 1993, ch. 13 (percentile interval,
Eq. 13.5) and ch. 14 (BCa: Eq. 14.9-14.10 the adjusted levels, 14.14 the bias correction
z0, 14.15 the acceleration a from the jackknife); DiCiccio & Efron, "Bootstrap confidence
intervals", Statistical Science 11(3), 1996, §2-3. The KPI itself is TriScale's (Jacob et
al., JSys 1(1) 2021, §4.2): a one-sided C-level bound of the p-th percentile.

The estimate is the sample percentile x_(k), k = ceil(p n) (Hyndman & Fan, Am. Stat. 50(4),
1996, definition 1; numpy's ``inverted_cdf``): an order statistic, like Thompson's bound.
Bootstrap bounds of high percentiles under-cover at small n (benchmarks/
sim_kpi_bootstrap_coverage.py, docs/statistics.md), so below the n where the simulated
coverage reaches the nominal level the method refuses, saying why and what to do instead
(:mod:`benchlang.stats._kpi_bootstrap_table`). Resamples come from the experiment's seed
through :mod:`benchlang.design.streams` (SplitMix64), keyed by the values themselves, so the
same data and seed give the same bound on every machine.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

from benchlang.design.streams import uniforms
from benchlang.stats._kpi_bootstrap_table import needed_n
from benchlang.stats._orderstat import check_percent
from benchlang.stats.independence import independence_rows
from benchlang.stats.kpi import KPI


def sample_rank(n: int, p: float) -> int:
    """1-based rank k of the sample p-quantile x_(k) (``inverted_cdf``: k = max(1, ceil(p n)))."""
    return int(np.quantile(np.arange(1, n + 1), p, method="inverted_cdf"))


_BLOCK = 1 << 22
"""Resampled values held at once (32 MiB): replicates are drawn in blocks of rows."""


def resample_indices(values: np.ndarray, rows: range, seed: int) -> np.ndarray:
    """Indices drawn with replacement for the replicates ``rows`` (len(rows) x n), from the
    seed's ``kpi_bootstrap`` stream keyed by the values' bytes (different series draw
    independently; a replicate's draws do not depend on the block it is drawn in)."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    key = hashlib.sha256(x.tobytes()).hexdigest()[:16]
    n = x.size
    counters = np.arange(rows.start, rows.stop)[:, None]
    u = uniforms(seed, f"kpi_bootstrap:{key}", counters, np.arange(n))
    return np.minimum((u * n).astype(np.int64), n - 1)


def replicates_of(values: np.ndarray, k: int, replicates: int, seed: int) -> np.ndarray:
    """The ``replicates`` bootstrap replicates of x_(k), in blocks of bounded memory."""
    step = max(1, _BLOCK // max(1, values.size))
    out = np.empty(replicates)
    for start in range(0, replicates, step):
        rows = range(start, min(start + step, replicates))
        idx = resample_indices(values, rows, seed)
        out[rows.start : rows.stop] = np.partition(values[idx], k - 1, axis=1)[:, k - 1]
    return out


def jackknife_percentiles(sorted_rows: np.ndarray, p: float) -> np.ndarray:
    """Leave-one-out sample p-quantiles of each row of ``sorted_rows`` (m x n, sorted).

    Leaving out the i-th smallest value, the (n-1)-sample's k'-th smallest (k' = its rank)
    is x_(k'+1) when i <= k' and x_(k') otherwise, so the n jackknife values need no loop.
    """
    n = sorted_rows.shape[1]
    k = sample_rank(n - 1, p)
    below = np.arange(1, n + 1) <= k
    return np.where(below, sorted_rows[:, [k]], sorted_rows[:, [k - 1]])


def row_quantiles(sorted_rows: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Per row, the quantile at its own level (numpy's default linear interpolation)."""
    b = sorted_rows.shape[1]
    position = np.clip(levels, 0.0, 1.0) * (b - 1)
    low = np.floor(position).astype(np.int64)
    high = np.minimum(low + 1, b - 1)
    frac = position - low
    rows = np.arange(sorted_rows.shape[0])
    lo, hi = sorted_rows[rows, low], sorted_rows[rows, high]
    return lo + frac * (hi - lo)


def bootstrap_bounds(
    estimate: np.ndarray,
    replicates: np.ndarray,
    jackknife: np.ndarray,
    confidence: float,
    bound: str,
    interval: str,
) -> dict[str, np.ndarray]:
    """One-sided bounds of m data sets at once from their replicates (m x B).

    ``percentile``: the C (upper) or 1 - C (lower) quantile of the replicates (Efron &
    Tibshirani Eq. 13.5). ``bca``: that quantile at the adjusted level
    Phi(z0 + (z0 + z)/(1 - a (z0 + z))) (Eq. 14.10), z0 = Phi^-1(#{theta* < theta}/B)
    (Eq. 14.14), a = sum d^3 / (6 (sum d^2)^1.5) over jackknife deviations d (Eq. 14.15).
    Returns ``value``, ``level``, ``bias`` (z0), ``acceleration`` (a) and ``degenerate``
    (BCa undefined: no replicate on one side of the estimate, or a level out of reach).
    """
    from scipy.special import ndtr, ndtri

    c = confidence / 100.0
    z = ndtri(c if bound == "upper" else 1.0 - c)
    ordered = np.sort(replicates, axis=1)
    m = ordered.shape[0]
    if interval == "percentile":
        level = np.full(m, c if bound == "upper" else 1.0 - c)
        z0 = np.zeros(m)
        a = np.zeros(m)
        degenerate = np.zeros(m, dtype=bool)
    else:
        share = (replicates < estimate[:, None]).mean(axis=1)
        d = jackknife.mean(axis=1, keepdims=True) - jackknife
        s2 = (d**2).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            z0 = ndtri(share)
            a = np.where(s2 > 0, (d**3).sum(axis=1) / (6.0 * s2**1.5), 0.0)
            shifted = z0 + z
            denominator = 1.0 - a * shifted
            level = ndtr(z0 + shifted / denominator)
        degenerate = (share <= 0.0) | (share >= 1.0) | (denominator <= 0.0)
        level = np.where(degenerate, np.nan, level)
    value = np.where(degenerate, np.nan, row_quantiles(ordered, np.nan_to_num(level)))
    return {"value": value, "level": level, "bias": z0, "acceleration": a, "degenerate": degenerate}


def kpi_bootstrap(
    values: np.ndarray,
    percentile: float,
    confidence: float,
    bound: str = "upper",
    exclude: int = 0,
    interval: str = "bca",
    replicates: int = 2000,
    seed: int = 0,
) -> KPI:
    """The C-level one-sided bootstrap bound of the p-th percentile of one series' values.

    NaN values (non-converged trials) are dropped. Below the n at which the method's
    simulated coverage reaches ``confidence`` (``_kpi_bootstrap_table.needed_n``) no bound is
    computed: the KPI carries the reason and the fix (Thompson's exact bound, or more runs).
    ``exclude`` is not supported (the declaration has no such parameter: it is always 0).
    """
    p = check_percent("percentile", percentile)
    check_percent("confidence", confidence)
    x = np.asarray(values, dtype=float).ravel()
    x = x[np.isfinite(x)]
    n = x.size
    need, why = needed_n(percentile, confidence, bound, interval)
    test = independence_rows(x[None, :])[0]
    details: dict[str, object] = {"interval": interval, "replicates": replicates, "seed": seed}
    refusal = None
    if need is None:
        refusal = f"the {interval} bootstrap bound {why}; use thompson (exact at any n)"
    elif n < need:
        refusal = (
            f"the {interval} bootstrap bound of p{percentile:g} at {confidence:g}% covers less "
            f"than {confidence:g}% below n = {need} (simulated; docs/statistics.md), and this "
            f"series has {n}: use thompson (exact) or at least {need} runs per series"
        )
    value = math.nan
    if refusal is None:
        k = sample_rank(n, p)
        reps = replicates_of(x, k, replicates, seed)
        ordered = np.sort(x)
        estimate = ordered[k - 1]
        jack = jackknife_percentiles(ordered[None, :], p)
        got = bootstrap_bounds(
            np.array([estimate]), reps[None, :], jack, confidence, bound, interval
        )
        if got["degenerate"][0]:
            refusal = (
                "BCa is undefined here (every bootstrap replicate lies on one side of the "
                "estimate: too few distinct values); use thompson or interval percentile"
            )
        else:
            value = float(got["value"][0])
            details.update(
                estimate=float(estimate),
                level=float(got["level"][0]),
                bias=float(got["bias"][0]),
                acceleration=float(got["acceleration"][0]),
            )
    return KPI(
        value=value,
        rank=None,
        n=n,
        min_n=need if need is not None else 0,
        percentile=float(percentile),
        confidence=float(confidence),
        achieved_confidence=math.nan,
        bound=bound,
        independence=test,
        method="kpi_bootstrap",
        refusal=refusal,
        details=details,
    )
