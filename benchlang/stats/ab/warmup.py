"""Warm-up and cool-down lengths from repeated requests (Bakshy & Frachtenberg, WWW 2015, §2.2).

A freshly started service instance is slow at first (JIT compilation, cold caches) and may drift
at the end of a batch. Repeating requests makes this visible: within one host batch, a trial's
*residual* ``y - median(y of the same request in the same host batch)`` removes the request and
batch effects (the median keeps a slow first repetition from shifting its siblings), so what is left against the trial's position in the batch is the warm-up curve.
The suggestion is the shortest prefix (suffix) outside which every position's mean residual is
within ``z`` standard errors of the middle of the batch; the lag-1 autocorrelation of the residuals in execution
order says whether neighbouring trials still influence each other.
"""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen(eq=False)
class WarmupSuggestion:
    """Suggested warm-up (``warmup``) and cool-down (``cooldown``) trials per host batch."""

    warmup: int
    cooldown: int
    position_mean: np.ndarray
    position_se: np.ndarray
    autocorrelation: float
    batches: int


def _dense(*cols: np.ndarray) -> np.ndarray:
    return np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)[1].ravel()


def _flagged_prefix(mean: np.ndarray, se: np.ndarray, z: float, limit: int) -> int:
    outside = np.flatnonzero(np.abs(mean[:limit]) > z * se[:limit])
    return int(outside[-1]) + 1 if outside.size else 0


def suggest_warmup(
    y: np.ndarray,
    request: np.ndarray,
    batch: np.ndarray,
    position: np.ndarray,
    *,
    z: float = 3.5,
    max_fraction: float = 0.25,
) -> WarmupSuggestion:
    """Warm-up and cool-down from the position profile of within-batch residuals (§2.2).

    ``batch`` identifies the host batch of each trial (e.g. ``host * 2 + batch``) and
    ``position`` its index in that batch's execution order; every request must run at least
    twice in a batch. A position's mean residual is compared with those of the middle half of
    the batch: their median is the centre; the standard error is the larger of their spread
    (which absorbs any shift that a transient gives the request medians) and the residual SD of
    the middle positions over the square root of the position's trial count (which keeps ten
    noisy middle means from setting too small a scale). At most ``max_fraction`` of a batch is
    suggested for either end.
    """
    y = np.asarray(y, dtype=np.float64)
    run = _dense(np.asarray(batch))
    cell = _dense(run, np.asarray(request))
    counts = np.bincount(cell)
    if counts.min() < 2:
        raise ValueError("every request must be repeated in its host batch to separate warm-up")
    by_cell = np.lexsort((y, cell))
    start = np.r_[0, np.cumsum(counts)[:-1]]
    ys = y[by_cell]
    median = 0.5 * (ys[start + (counts - 1) // 2] + ys[start + counts // 2])
    resid = y - median[cell]
    order = np.lexsort((np.asarray(position), run))
    length = np.bincount(run)
    pos = np.empty(y.size, dtype=np.int64)
    pos[order] = np.arange(y.size) - np.r_[0, np.cumsum(length)[:-1]][run[order]]
    back = (length[run] - 1) - pos
    L = int(length.min())
    reference = np.arange(L // 4, L - L // 4)
    if reference.size < 3:
        raise ValueError(
            "too few trials per host batch: need at least 6 to compare its ends with its middle"
        )

    def profile(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        n = np.bincount(index)
        mean = np.bincount(index, weights=resid) / np.maximum(n, 1)
        mid = mean[reference]
        centre = np.median(mid)
        spread = 1.4826 * np.median(np.abs(mid - centre))
        pooled = np.std(resid[np.isin(index, reference)]) / np.sqrt(np.maximum(n, 1))
        return mean - centre, np.maximum(spread, pooled)

    mean, se = profile(pos)
    back_mean, back_se = profile(back)
    limit = max(1, int(max_fraction * L))
    r, same = resid[order], run[order][1:] == run[order][:-1]
    total = float(np.sum(r**2))  # 0 when the values are constant: no autocorrelation to see
    lag1 = float(np.sum(r[1:][same] * r[:-1][same]) / total) if same.any() and total else 0.0
    return WarmupSuggestion(
        warmup=_flagged_prefix(mean, se, z, limit),
        cooldown=_flagged_prefix(back_mean, back_se, z, limit),
        position_mean=mean,
        position_se=se,
        autocorrelation=lag1,
        batches=int(length.size),
    )
