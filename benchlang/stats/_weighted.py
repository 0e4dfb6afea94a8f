"""Percentiles of sorted values under bootstrap weights, exactly and in little time.

A cluster bootstrap replicate weights each value by how often its unit was drawn (Davison &
Hinkley 1997 §3.8); its statistic is the percentile of the sorted values under those weights.
Found directly that is a cumulative sum over every value for every replicate. The windowed form
gets the same crossing from one matrix product per block of replicates (each configuration's
weight below a window of sorted positions, and its total) and a cumulative sum over the window
only, placed around where a pilot of replicates crossed; a replicate that crosses outside its
window is computed directly. Both forms give identical results (integer weights, exact sums).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_BLOCK = 1 << 20  # weights per block of rows: cache-sized, and no (B, n) gathered copy
_PILOT = 32
_WINDOWED_FROM = 4096  # values per group below which the direct form is as fast


def _crossing(
    cum: np.ndarray, total: np.ndarray, percentile: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, how many cumulative weights lie below p·W (the first value reaching it) and
    how many at or below it (the first value exceeding it), with a relative tolerance."""
    target = total * (percentile / 100.0)
    tol = 1e-9 * np.maximum(total, 1.0)
    lo = np.count_nonzero(cum < (target - tol)[:, None], axis=1)
    hi = np.count_nonzero(cum <= (target + tol)[:, None], axis=1)
    return lo, hi


def _midpoint(sorted_values: np.ndarray, lo, hi, total: np.ndarray) -> np.ndarray:
    last = sorted_values.size - 1
    middle = 0.5 * (sorted_values[np.minimum(lo, last)] + sorted_values[np.minimum(hi, last)])
    return np.where(total > 0, middle, np.nan)


def _direct(
    sorted_values: np.ndarray, w: np.ndarray, cols: np.ndarray, percentile: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(percentiles, lo, hi) of every row of ``w``, a cumulative sum over every value."""
    n = sorted_values.size
    out = np.empty(w.shape[0])
    lo_all = np.empty(w.shape[0], dtype=np.int64)
    hi_all = np.empty(w.shape[0], dtype=np.int64)
    step = max(1, _BLOCK // n)
    for start in range(0, w.shape[0], step):
        rows = slice(start, start + step)
        cum = np.cumsum(w[rows][:, cols], axis=1, dtype=w.dtype)
        total = cum[:, -1].astype(float)
        lo_all[rows], hi_all[rows] = _crossing(cum, total, percentile)
        out[rows] = _midpoint(sorted_values, lo_all[rows], hi_all[rows], total)
    return out, lo_all, hi_all


def weighted_percentile(
    sorted_values: np.ndarray,
    weights: np.ndarray,
    percentile: float,
    columns: np.ndarray | None = None,
) -> np.ndarray:
    """The ``percentile`` of ``sorted_values`` (ascending, length n) under each row of
    ``weights`` (shape (B, n), non-negative; or (B, m) with ``columns`` giving each sorted
    value's column): the midpoint of the smallest value whose cumulative weight reaches p·W
    and the smallest whose cumulative weight exceeds it. With unit weights this is the usual
    median (mean of the two middle values for even n). Rows of zero total weight give nan.
    Returns shape (B,); integer weights are summed exactly."""
    w = np.asarray(weights)
    if sorted_values.size == 0:
        return np.full(w.shape[0], np.nan)
    if w.dtype.kind not in "iu":
        w = w.astype(float)
    cols = np.arange(sorted_values.size) if columns is None else np.asarray(columns)
    return _direct(sorted_values, w, cols, percentile)[0]


def replicate_percentiles(
    groups: Sequence[tuple[np.ndarray, np.ndarray]], weights: np.ndarray, percentile: float
) -> np.ndarray:
    """``weighted_percentile`` of each group (its sorted values, each value's column of
    ``weights``) under every row of integer ``weights`` (B, L): shape (B, len(groups)),
    identical to the direct form, windowed for large groups."""
    w = np.asarray(weights)
    out = np.empty((w.shape[0], len(groups)))
    large = (
        [j for j, (v, _) in enumerate(groups) if v.size >= _WINDOWED_FROM]
        if w.dtype.kind in "iu" and w.shape[0] > 4 * _PILOT
        else []
    )
    for j, (values, cols) in enumerate(groups):
        if j not in large:
            out[:, j] = weighted_percentile(values, w, percentile, columns=cols)
    if not large:
        return out
    windows = []
    masks = np.zeros((w.shape[1], 2 * len(large)))
    for i, j in enumerate(large):
        values, cols = groups[j]
        out[:_PILOT, j], lo, hi = _direct(values, w[:_PILOT], cols, percentile)
        spread = max(int(hi.max() - lo.min()), 64)
        a = max(0, int(lo.min()) - spread)
        b = min(values.size, int(hi.max()) + 1 + spread)
        windows.append((a, b))
        masks[:, 2 * i] = np.bincount(cols[:a], minlength=w.shape[1])
        masks[:, 2 * i + 1] = np.bincount(cols, minlength=w.shape[1])
    masks, column = np.unique(masks, axis=1, return_inverse=True)
    column = column.ravel()
    # integer sums are exact in float32 below 2**24, else in float64
    exact = np.float32 if int(w.sum(axis=1).max()) * masks.max() < 2**24 else np.float64
    masks = masks.astype(exact)
    redo: list[list[np.ndarray]] = [[] for _ in large]
    step = max(1, _BLOCK // w.shape[1])
    for start in range(_PILOT, w.shape[0], step):
        block = w[start : start + step]
        sums = (block.astype(exact) @ masks)[:, column].astype(float)
        for i, j in enumerate(large):
            values, cols = groups[j]
            a, b = windows[i]
            below, total = sums[:, 2 * i], sums[:, 2 * i + 1]
            cum = np.cumsum(block[:, cols[a:b]], axis=1, dtype=np.int64)
            cum += below.astype(np.int64)[:, None]
            lo, hi = _crossing(cum, total, percentile)
            lo, hi = lo + a, hi + a
            starts_inside = (a == 0) | (
                below < total * (percentile / 100.0) - 1e-9 * np.maximum(total, 1.0)
            )
            ends_inside = (b == values.size) | ((lo < b) & (hi < b))
            good = starts_inside & ends_inside
            rows = np.arange(start, start + block.shape[0])
            out[rows[good], j] = _midpoint(values, lo[good], hi[good], total[good])
            redo[i].append(rows[~good])
    for i, j in enumerate(large):
        rows = np.concatenate(redo[i])
        if rows.size:
            values, cols = groups[j]
            out[rows, j] = _direct(values, w[rows], cols, percentile)[0]
    return out
