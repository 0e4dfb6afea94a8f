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
sim_kpi_bootstrap_coverage.py, docs/statistics.md). Below the n where the simulated coverage
of the chosen interval reaches the nominal level (:mod:`benchlang.stats._kpi_bootstrap_table`)
the method answers, in this order, with the smoothed bootstrap where its own simulated
coverage reaches the level (Hall, DiCiccio & Romano, "On smoothing and the bootstrap",
Ann. Stat. 17(2), 1989; De Angelis & Young, "Smoothing the bootstrap", Int. Stat. Rev. 60(1),
1992), else with Thompson's order-statistic bound (exact at any n, and conservative with
ties: :mod:`benchlang.stats._orderstat`), with a note saying why; below the order statistic's
minimum n (299 for a 95% upper bound of p99) it refuses: no method covers there without
assumptions on the distribution. Resamples come from the experiment's seed
through :mod:`benchlang.design.streams` (SplitMix64), keyed by the values themselves, so the
same data and seed give the same bound on every machine.
"""

from __future__ import annotations

import hashlib
import math

import attrs
import numpy as np

from benchlang.design.streams import uniforms
from benchlang.stats._kpi_bootstrap_table import SMOOTHED_MIN_N, needed_n
from benchlang.stats._orderstat import check_percent
from benchlang.stats.independence import independence_rows
from benchlang.stats.kpi import KPI, kpi


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
    return np.asarray(lo + frac * (hi - lo))


def bandwidth(sorted_rows: np.ndarray) -> np.ndarray:
    """Kernel bandwidth per row: h = 0.9 min(s, IQR/1.349) n^(-1/5) (Silverman, Density
    Estimation, 1986, Eq. 3.31); the n^(-1/5) order is the one Hall, DiCiccio & Romano (1989,
    §3) find for smoothing a quantile's bootstrap. When ties make the IQR 0 (values rounded
    to 1 ms), s alone; 0 when the values are constant (then no smoothed bound)."""
    n = sorted_rows.shape[1]
    s = sorted_rows.std(axis=1, ddof=1) if n > 1 else np.zeros(sorted_rows.shape[0])
    q1, q3 = np.quantile(sorted_rows, [0.25, 0.75], axis=1)
    spread = np.where(q3 > q1, np.minimum(s, (q3 - q1) / 1.349), s)
    return np.asarray(0.9 * spread * n ** (-0.2))


def smoothed_replicates(
    sorted_rows: np.ndarray, idx: np.ndarray, noise: np.ndarray, k: int
) -> np.ndarray:
    """Replicates of x*_(k) from the smoothed bootstrap: each resampled value plus h times a
    standard normal draw (Gaussian kernel; Hall, DiCiccio & Romano 1989, §2; Efron &
    Tibshirani 1993, §16.5 "the smoothed bootstrap"). ``idx`` and ``noise`` are m x B x n
    (or B x n for one row), the result m x B."""
    rows = sorted_rows if idx.ndim == 3 else sorted_rows[0]
    h = bandwidth(sorted_rows)
    h = h[:, None, None] if idx.ndim == 3 else h[0]
    drawn = np.take_along_axis(rows[:, None, :], idx, axis=2) if idx.ndim == 3 else rows[idx]
    return np.partition(drawn + h * noise, k - 1, axis=-1)[..., k - 1]


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


def smoothed_draws(values: np.ndarray, rows: range, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and standard normal kernel draws of the replicates ``rows``: the indices as
    :func:`resample_indices`, the noise from the seed's ``kpi_bootstrap_smooth`` stream."""
    from scipy.special import ndtri

    x = np.ascontiguousarray(values, dtype=np.float64)
    key = hashlib.sha256(x.tobytes()).hexdigest()[:16]
    counters = np.arange(rows.start, rows.stop)[:, None]
    u = uniforms(seed, f"kpi_bootstrap_smooth:{key}", counters, np.arange(x.size))
    return resample_indices(values, rows, seed), ndtri(np.maximum(u, 2.0**-53))


def smoothed_bound(
    ordered: np.ndarray, k: int, confidence: float, bound: str, replicates: int, seed: int
) -> float:
    """The smoothed bootstrap's percentile-interval bound (Efron & Tibshirani Eq. 13.5 on the
    smoothed replicates), replicates drawn in blocks of bounded memory; nan when h = 0."""
    if bandwidth(ordered[None, :])[0] <= 0:
        return math.nan
    step = max(1, _BLOCK // max(1, ordered.size))
    reps = np.empty(replicates)
    for start in range(0, replicates, step):
        rows = range(start, min(start + step, replicates))
        idx, noise = smoothed_draws(ordered, rows, seed)
        reps[rows.start : rows.stop] = smoothed_replicates(ordered[None, :], idx, noise, k)
    got = bootstrap_bounds(
        np.array([ordered[k - 1]]),
        reps[None, :],
        ordered[None, :1],
        confidence,
        bound,
        "percentile",
    )
    return float(got["value"][0])


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

    NaN values (non-converged trials) are dropped. Below the n at which the interval's
    simulated coverage reaches ``confidence`` (``_kpi_bootstrap_table.needed_n``), or when BCa
    is undefined (ties), the smoothed bootstrap answers where its simulated coverage reaches
    the level (``SMOOTHED_MIN_N``), else Thompson's order-statistic bound (``rank`` and exact
    ``achieved_confidence`` set), ``details["note"]`` saying why; only below the order
    statistic's minimum n is there no bound (``refusal``: no method covers there without
    assumptions). ``exclude`` is not supported (the declaration has no such parameter).
    """
    p = check_percent("percentile", percentile)
    check_percent("confidence", confidence)
    x = np.asarray(values, dtype=float).ravel()
    x = x[np.isfinite(x)]
    n = x.size
    need, why = needed_n(percentile, confidence, bound, interval)
    details: dict[str, object] = {"interval": interval, "replicates": replicates, "seed": seed}
    reason = None
    if need is None:
        reason = f"the {interval} bootstrap bound {why}"
    elif n < need:
        reason = (
            f"the {interval} bootstrap bound of p{percentile:g} at {confidence:g}% covers less "
            f"than {confidence:g}% below n = {need} (simulated; docs/statistics.md), and this "
            f"series has {n}"
        )
    ordered = np.sort(x)
    k = sample_rank(n, p) if n else 1
    if reason is None:
        reps = replicates_of(x, k, replicates, seed)
        jack = jackknife_percentiles(ordered[None, :], p)
        got = bootstrap_bounds(ordered[[k - 1]], reps[None, :], jack, confidence, bound, interval)
        if not got["degenerate"][0]:
            details.update(
                estimate=float(ordered[k - 1]),
                level=float(got["level"][0]),
                bias=float(got["bias"][0]),
                acceleration=float(got["acceleration"][0]),
            )
            return _kpi(
                x, float(got["value"][0]), need or 0, percentile, confidence, bound, details
            )
        reason = (
            "BCa is undefined here (every bootstrap replicate lies on one side of the "
            "estimate: too few distinct values)"
        )
    smooth, _ = needed_n(percentile, confidence, bound, "smoothed", SMOOTHED_MIN_N)
    if smooth is not None and n >= smooth:
        value = smoothed_bound(ordered, k, confidence, bound, replicates, seed)
        if math.isfinite(value):
            details.update(
                answered_by="smoothed",
                estimate=float(ordered[k - 1]),
                bandwidth=float(bandwidth(ordered[None, :])[0]),
                note=f"{reason}: the smoothed bootstrap answers (simulated to cover from n = "
                f"{smooth}; Hall, DiCiccio & Romano 1989)",
            )
            return _kpi(x, value, smooth, percentile, confidence, bound, details)
    exact = kpi(x, percentile, confidence, bound)
    if exact.enough:
        details.update(
            answered_by="thompson",
            note=f"{reason}: the order-statistic bound answers instead (Thompson 1936, exact "
            f"at any n; with ties conservative)",
        )
        return attrs.evolve(exact, method="kpi_bootstrap", details=details)
    refusal = (
        f"{reason}, and the order-statistic bound needs at least {exact.min_n} values: below "
        f"that no method covers p{percentile:g} at {confidence:g}% without assumptions on the "
        f"distribution; run at least {exact.min_n} runs per series"
    )
    return attrs.evolve(exact, method="kpi_bootstrap", details=details, refusal=refusal)


def _kpi(
    x: np.ndarray,
    value: float,
    min_n: int,
    percentile: float,
    confidence: float,
    bound: str,
    details: dict[str, object],
) -> KPI:
    """A bootstrap bound as a KPI (no rank: its coverage is the simulated one)."""
    return KPI(
        value=value,
        rank=None,
        n=x.size,
        min_n=min_n,
        percentile=float(percentile),
        confidence=float(confidence),
        achieved_confidence=math.nan,
        bound=bound,
        independence=independence_rows(x[None, :])[0],
        method="kpi_bootstrap",
        refusal=None,
        details=details,
    )
