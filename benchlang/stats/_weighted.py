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

import math
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from benchlang.stats._kernels import Tally, native, window_crossings

BLOCK_WEIGHTS = 1 << 20  # weights per block of rows: cache-sized, and no (B, n) gathered copy
PILOT_ROWS = 16  # replicates in the first block at least: it places the windows
_WINDOWED_FROM = 256  # values per group below which the direct form is as fast (a ranking of
# 10 groups of 500-4,000 values under 1,000 replicates: the windowed form in 0.5-0.75 of the time)
_THREADED_FROM = 4  # blocks below which starting worker threads costs more than it saves


def _bounds(
    total: np.ndarray, percentile: float, dtype: DTypeLike | None = None
) -> tuple[np.ndarray, ...]:
    """(p·W, its tolerance, the bound a cumulative weight must stay below to lie before the
    crossing, the bound it may reach and still lie before the value exceeding p·W): a relative
    tolerance of 1e-9; for integer weights (``dtype``) the bounds are integers, as below x is
    below ceil(x) and at most y is at most floor(y)."""
    target = total * (percentile / 100.0)
    tol = 1e-9 * np.maximum(total, 1.0)
    low, high = target - tol, target + tol
    if dtype is not None and np.dtype(dtype).kind in "iu":
        low, high = np.ceil(low).astype(dtype), np.floor(high).astype(dtype)
    return target, tol, low, high


def _crossing(
    cum: np.ndarray, total: np.ndarray, percentile: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate (a row of ``cum``), how many cumulative weights lie below p·W (the first
    value reaching it) and how many at or below it (the first value exceeding it)."""
    _, _, low, high = _bounds(total, percentile, cum.dtype)
    lo = np.count_nonzero(cum < low[:, None], axis=1)
    hi = np.count_nonzero(cum <= high[:, None], axis=1)
    return lo, hi


def _midpoint(
    sorted_values: np.ndarray, lo: np.ndarray, hi: np.ndarray, total: np.ndarray
) -> np.ndarray:
    last = sorted_values.size - 1
    middle = 0.5 * (sorted_values[np.minimum(lo, last)] + sorted_values[np.minimum(hi, last)])
    return np.where(total > 0, middle, np.nan)


def _direct(
    sorted_values: np.ndarray,
    w: np.ndarray,
    cols: np.ndarray,
    percentile: float,
    per_leaf: np.ndarray | None = None,
    total: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(percentiles, lo, hi) of every row of ``w``, a cumulative sum over every value (with
    C and int32 weights: each group's total from a matrix product, then one walk of
    ``_kernels.window_crossings`` over the whole group that stops at the crossing; ``per_leaf``
    is how many values each column holds, ``total`` each row's total weight, when the caller
    has them already)."""
    n = sorted_values.size
    if n and w.dtype == np.int32 and native() is not None:
        if total is None:
            if per_leaf is None:
                per_leaf = np.bincount(cols, minlength=w.shape[1])
            total = w.astype(np.float64) @ per_leaf.astype(np.float64)
        _, _, low, high = _bounds(total, percentile, np.int64)
        start, width, below = np.zeros(1, np.int64), np.full(1, n), np.zeros((w.shape[0], 1))
        lo, hi = window_crossings(w, cols, start, width, below, low[:, None], high[:, None])
        return _midpoint(sorted_values, lo[:, 0], hi[:, 0], total), lo[:, 0], hi[:, 0]
    out = np.empty(w.shape[0])
    lo_all = np.empty(w.shape[0], dtype=np.int64)
    hi_all = np.empty(w.shape[0], dtype=np.int64)
    step = max(1, BLOCK_WEIGHTS // n)
    for first in range(0, w.shape[0], step):
        rows = slice(first, first + step)
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


def unit_percentile(sorted_values: np.ndarray, percentile: float) -> float:
    """``weighted_percentile`` with every weight 1, in closed form: the cumulative weights are
    1..n, so the values reaching and exceeding p·n are found by rounding (nan when empty)."""
    n = sorted_values.size
    if n == 0:
        return math.nan
    _, _, low, high = _bounds(np.array([n]), percentile, np.int64)
    lo = min(max(int(low[0]) - 1, 0), n)
    hi = min(max(int(high[0]), 0), n)
    return float(0.5 * (sorted_values[min(lo, n - 1)] + sorted_values[min(hi, n - 1)]))


def replicate_percentiles(
    groups: Sequence[tuple[np.ndarray, np.ndarray]],
    blocks: Sequence[Callable[[], np.ndarray]],
    percentile: float,
) -> np.ndarray:
    """``weighted_percentile`` of each group (its sorted values, each value's column of the
    weights) under every row of the integer weight ``blocks`` (functions each returning a
    (b, L) block, e.g. a bootstrap's replicates a block at a time; a block that also has
    ``tallied(tally)`` counts its sums under the windows' masks as it draws): shape
    (B, len(groups)), identical to the direct form. The first ``PILOT_ROWS`` rows are the
    pilot: computed directly, they place each large group's window. The pilot's groups and the
    other blocks are computed on every core this process may use (the C kernels, numpy's sums
    and matrix products release the GIL) and kept in their order: the result does not depend
    on the cores."""
    if not blocks:
        return np.empty((0, len(groups)))
    workers = min(cores(), max(len(blocks) - 1, len(groups)))
    if workers < 2 or len(blocks) < _THREADED_FROM:
        return _replicate_percentiles(groups, blocks, percentile, map)
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    # one BLAS thread per worker: a multithreaded product in every worker oversubscribes the
    # cores (measured 3.6 s against 5.0 s at 1,000,000 trials on 2 cores)
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as pool:
        return _replicate_percentiles(groups, blocks, percentile, pool.map)


Groups = Sequence[tuple[np.ndarray, np.ndarray]]
"""Each group's values and their columns in the weights."""

Mapper = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]
"""``map`` or a thread pool's."""


def _replicate_percentiles(
    groups: Groups, blocks: Sequence[Callable[[], np.ndarray]], percentile: float, mapper: Mapper
) -> np.ndarray:
    first = blocks[0]()
    windows = _Windows(groups, first[:PILOT_ROWS], percentile, mapper)
    out = [windows.pilot]
    if first.shape[0] > PILOT_ROWS:
        out.append(windows.percentiles(first[PILOT_ROWS:]))
    out += mapper(lambda make: windows.percentiles(*_drawn(make, windows.tally)), blocks[1:])
    return np.concatenate(out)


def _drawn(make: Callable[..., Any], tally: Tally | None) -> tuple[np.ndarray, np.ndarray | None]:
    """A block's weights, and their tally sums when the block can count them as it draws."""
    tallied = getattr(make, "tallied", None)
    return tallied(tally) if tallied is not None and tally is not None else (make(), None)


def cores() -> int:
    """How many cores this process may run on (its affinity where the platform says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class _Windows:
    """Where each large group's replicates cross p·W (from a pilot block), the weight below
    each window and each group's total as one matrix product, and the windowed crossing."""

    def __init__(
        self, groups: Groups, pilot: np.ndarray, percentile: float, mapper: Mapper = map
    ) -> None:
        self.groups, self.percentile = groups, percentile
        width = pilot.shape[1]
        self.large = [j for j, (v, _) in enumerate(groups) if v.size >= _WINDOWED_FROM]
        # each small group's values per column: their totals as one product a block (integer
        # weights, so exact in any order)
        small = [cols for j, (_, cols) in enumerate(groups) if j not in self.large]
        counts = [np.bincount(cols, minlength=width) for cols in small]
        self.small_leaf = np.stack(counts, axis=1).astype(np.float64) if small else None
        self.bounds = []
        self.pilot = np.empty((pilot.shape[0], len(groups)))
        rows = np.zeros((2 * len(self.large), width))
        direct = mapper(lambda group: _direct(group[0], pilot, group[1], percentile), groups)
        for j, ((values, cols), (found, lo, hi)) in enumerate(zip(groups, direct, strict=True)):
            self.pilot[:, j] = found
            if j not in self.large:
                continue
            i = self.large.index(j)
            spread = max(int(hi.max() - lo.min()), 64)
            a = max(0, int(lo.min()) - spread // 2)
            self.bounds.append((a, min(values.size, int(hi.max()) + 1 + spread // 2)))
            rows[2 * i] = np.bincount(cols[:a], minlength=width)
            rows[2 * i + 1] = np.bincount(cols, minlength=width)
        distinct: dict[bytes, int] = {}
        column = [distinct.setdefault(row.tobytes(), len(distinct)) for row in rows]
        keep = [column.index(d) for d in range(len(distinct))]
        self.tally = Tally(rows[keep].T) if self.large else None
        self.column = np.asarray(column, dtype=np.int64)
        self.per_leaf = rows[1::2].astype(np.int32)  # each large group's values per column
        # every large group's window, side by side: one walk a block (``window_crossings``)
        parts = [self.groups[j][1][a:b] for j, (a, b) in zip(self.large, self.bounds, strict=True)]
        self.window_cols = np.concatenate(parts) if parts else np.empty(0, np.int64)
        self.widths = np.array([part.size for part in parts], dtype=np.int64)
        self.starts = np.cumsum(self.widths) - self.widths

    def percentiles(self, block: np.ndarray, sums: np.ndarray | None = None) -> np.ndarray:
        """Each group's percentile under every row of ``block``; ``sums``, when given, are
        the rows' ``self.tally`` sums, counted while they were drawn."""
        out = np.empty((block.shape[0], len(self.groups)))
        small = [j for j in range(len(self.groups)) if j not in self.large]
        totals = None
        if self.small_leaf is not None and block.dtype == np.int32 and native() is not None:
            totals = block.astype(np.float64) @ self.small_leaf
        for i, j in enumerate(small):
            values, cols = self.groups[j]
            total = None if totals is None else totals[:, i]
            out[:, j] = _direct(values, block, cols, self.percentile, total=total)[0]
        if not self.large:
            return out
        if sums is None:
            assert self.tally is not None  # there are large groups
            sums = self.tally.sums(block)
        sums = sums[:, self.column]
        below, total = sums[:, 0::2], sums[:, 1::2]
        target, tol, low, high = _bounds(total.astype(float), self.percentile, np.int64)
        lo, hi = window_crossings(
            block, self.window_cols, self.starts, self.widths, below, low, high
        )
        for i, j in enumerate(self.large):
            values, cols = self.groups[j]
            a, b = self.bounds[i]
            lo_i, hi_i, total_i = lo[:, i] + a, hi[:, i] + a, total[:, i]
            starts_inside = (a == 0) | (below[:, i] < target[:, i] - tol[:, i])
            good = starts_inside & ((b == values.size) | ((lo_i < b) & (hi_i < b)))
            out[good, j] = _midpoint(values, lo_i[good], hi_i[good], total_i[good])
            if not good.all():
                redo = _direct(values, block[~good], cols, self.percentile, self.per_leaf[i])
                out[~good, j] = redo[0]
        return out
