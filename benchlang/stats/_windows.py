"""Vectorised metrics over sliding windows (for the convergence test of TriScale §4.1).

All windows have the same length ``w``; ``starts`` are their first indices. Means use a
cumulative sum, min/max a reduction over the segments cut by window edges, and order
statistics a rank-bucket scheme: one argsort of the series (O(N log N)) splits the sorted
values into ~sqrt(N) buckets of consecutive ranks; per-segment bucket counts and prefix
sums locate, for every window, the bucket holding its k-th value, which is then found
among that bucket's ~sqrt(N) members. Cost O(N log N + windows * sqrt(N)) instead of
O(windows * w); ties are exact because ranks are unique.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

DIRECT_LIMIT = 20_000


def _segments(n: int, starts: np.ndarray, w: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    bounds = np.unique(np.concatenate([starts, starts + w, [0, n]]))
    return bounds, np.searchsorted(bounds, starts), np.searchsorted(bounds, starts + w)


def window_mean(x: np.ndarray, starts: np.ndarray, w: int) -> np.ndarray:
    """Means from one cumulative sum, centred on x[0] so large offsets lose no precision."""
    c = np.concatenate([[0.0], np.cumsum(x - x[0])])
    means: np.ndarray = x[0] + (c[starts + w] - c[starts]) / w
    return means


def window_extreme(x: np.ndarray, starts: np.ndarray, w: int, kind: str) -> np.ndarray:
    ufunc = np.minimum if kind == "min" else np.maximum
    bounds, si, ei = _segments(x.size, starts, w)
    seg = ufunc.reduceat(x, bounds[:-1])
    idx = np.arange(seg.size)
    inside = (idx[None, :] >= si[:, None]) & (idx[None, :] < ei[:, None])
    fill = np.inf if kind == "min" else -np.inf
    extremes: np.ndarray = ufunc.reduce(np.where(inside, seg[None, :], fill), axis=1)
    return extremes


def window_order_stats(x: np.ndarray, starts: np.ndarray, w: int, ks: np.ndarray) -> np.ndarray:
    """The k-th smallest (0-based) value of every window, for each k in ``ks``: (len(ks), m)."""
    n, m = x.size, starts.size
    order = np.argsort(x)
    bs = max(1, math.isqrt(n))
    nb = -(-n // bs)
    bounds, si, ei = _segments(n, starts, w)
    seg = np.repeat(np.arange(bounds.size - 1, dtype=np.int64), np.diff(bounds))
    key = seg[order] * nb + np.repeat(np.arange(nb, dtype=np.int64), bs)[:n]
    counts = np.bincount(key, minlength=(bounds.size - 1) * nb).reshape(-1, nb)
    prefix = np.concatenate([np.zeros((1, nb), np.int64), np.cumsum(counts, axis=0)])
    cum = np.cumsum(prefix[ei] - prefix[si], axis=1)
    members = np.concatenate([order, np.full(nb * bs - n, -1)]).reshape(nb, bs)
    rows = np.arange(m)
    out = np.empty((len(ks), m))
    for j, k in enumerate(ks):
        b = (cum <= k).sum(axis=1)
        before = np.where(b > 0, cum[rows, np.maximum(b - 1, 0)], 0)
        pos = members[b]
        inside = (pos >= starts[:, None]) & (pos < starts[:, None] + w)
        col = (np.cumsum(inside, axis=1) > (k - before)[:, None]).argmax(axis=1)
        out[j] = x[pos[rows, col]]
    return out


def window_percentile(x: np.ndarray, starts: np.ndarray, w: int, q: float) -> np.ndarray:
    """numpy's default ("linear", Hyndman-Fan type 7) percentile of every window."""
    if starts.size * w <= DIRECT_LIMIT:
        return np.asarray(np.percentile(sliding_window_view(x, w)[starts], q, axis=1))
    h = (w - 1) * q / 100.0
    lo = math.floor(h)
    hi = min(lo + 1, w - 1)
    a, b = window_order_stats(x, starts, w, np.array([lo, hi]))
    t = h - lo
    return np.asarray(np.where(t >= 0.5, b - (b - a) * (1 - t), a + (b - a) * t))
