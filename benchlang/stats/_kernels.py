"""The cluster bootstrap's inner loops, twice: in C (``_kernels.c``, built with the package or
else on first use by ``benchlang.native``, and called through ctypes, which releases the GIL)
and in numpy, used when there is no build (no C compiler at install nor at first use) or
``BENCHLANG_NATIVE=0``. Both give the same integers (tested on
balanced and unbalanced designs), so a result never depends on the machine having a compiler;
the C forms only skip the temporaries (1,000,000 trials: docs/benchmarks.md).

Random draws are SplitMix64 (Steele, Lea & Flood, "Fast splittable pseudorandom number
generators", OOPSLA 2014), a counter-based stream: draw t of the stream keyed k is
``mix(k + (t + 1)·γ)``, so numpy computes any run of draws at once and C one after the other.
A draw bounded to [0, m) is ``floor(u·m / 2^64)`` (Lemire, "Fast random integer generation in
an interval", ACM TOMACS 29(1), 2019, §2, without the rejection step: each outcome's
probability is off by less than m/2^64, below 1e-14 for m ≤ 65,536).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
from typing import TYPE_CHECKING

import numpy as np

from benchlang.native import KERNELS, choice, find

if TYPE_CHECKING:
    import numpy.typing as npt

_DRAWS_AT_ONCE = 1 << 15  # draws made together by the numpy form: its temporaries stay in cache
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_LOW32 = np.uint64(0xFFFFFFFF)
_MAX_VECS = 8  # MAX_VECS in _kernels.c: at most 128 masks tallied while drawing
_I64 = ctypes.c_int64
_P = ctypes.c_void_p


@functools.cache
def _load(cc: str | None, enabled: bool) -> ctypes.CDLL | None:
    lib = None
    for shipped in (True, False):  # a shipped build this C library cannot load: build one
        path, _ = find(KERNELS, cc, enabled, shipped)
        if path is None:
            return None
        with contextlib.suppress(OSError):
            lib = ctypes.CDLL(str(path))
            break
    if lib is None:
        return None
    lib.draw_children.argtypes = [_P, _I64, _I64, _P, _P, _I64, ctypes.c_uint64, _P]
    lib.draw_tally.argtypes = [*lib.draw_children.argtypes, _P, _I64, _I64, _P]
    lib.window_crossings.argtypes = [_P, _I64, _I64, _P, _P, _P, _I64, _P, _P, _P, _P, _P]
    for f in (lib.draw_children, lib.draw_tally, lib.window_crossings):
        f.restype = None
    return lib


def native() -> ctypes.CDLL | None:
    """The built kernels, or None (no build and no compiler, or ``BENCHLANG_NATIVE=0``)."""
    return _load(*choice())


def _c(a: np.ndarray, dtype: npt.DTypeLike) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=dtype)


def draw_children(
    counts: np.ndarray, first: np.ndarray, m: np.ndarray, n_child: int, key: int
) -> np.ndarray:
    """Row by row, each parent p drawn ``counts[r, p]`` times draws ``counts[r, p]·m[p]`` of
    its own ``m[p]`` children (numbered from ``first[p]``) uniformly with replacement, in the
    order row, parent, draw, from the stream ``key``: the (rows, n_child) int32 counts."""
    counts, first, m = _c(counts, np.int32), _c(first, np.int64), _c(m, np.int64)
    out = np.empty((counts.shape[0], n_child), dtype=np.int32)
    lib = native()
    if lib is None:
        _draw_children_numpy(counts, first, m, key, out)
    else:
        lib.draw_children(counts.ctypes.data, counts.shape[0], counts.shape[1],
                          first.ctypes.data, m.ctypes.data, n_child, key, out.ctypes.data)  # fmt: skip
    return out


class Tally:
    """Masks over the leaves, shape (L, q), of small non-negative integers (how many of a
    group's values lie in a leaf, below a window or at all), and each replicate's exact sums
    under them. Masks of at most 255 and at most 128 of them are also kept as 8-bit lanes,
    16 a vector, for ``draw_tally`` to tally while it draws."""

    def __init__(self, masks: np.ndarray) -> None:
        self.masks = np.ascontiguousarray(masks, dtype=np.float64)
        self.masks32 = self.masks.astype(np.float32)
        leaves, q = self.masks.shape
        vecs, top = -(-q // 16), int(self.masks.max(initial=0))
        self.lanes, self.every = None, 0
        if 0 < top <= 255 and vecs <= _MAX_VECS:
            self.lanes = np.zeros((leaves, 16 * vecs), dtype=np.uint8)
            self.lanes[:, :q] = self.masks
            self.every = 255 // top

    def sums(self, block: np.ndarray) -> np.ndarray:
        """(rows, q) int64: each row of ``block`` (rows, L) summed under each mask."""
        # Integer sums are exact in float32 below 2**24. With non-negative terms a float32
        # sum (in any order) comes out below 2**24 only when its exact value is below it, so
        # results below it are exact and any other block is summed again in float64.
        sums = block.astype(np.float32) @ self.masks32
        if sums.max(initial=0) >= 2**24:
            sums = block.astype(np.float64) @ self.masks
        return sums.astype(np.int64)


def draw_tally(
    counts: np.ndarray, first: np.ndarray, m: np.ndarray, n_child: int, key: int, tally: Tally
) -> tuple[np.ndarray, np.ndarray]:
    """``draw_children`` and the drawn rows' ``tally.sums``, both at once where C can."""
    lib = native()
    if lib is None or tally.lanes is None:
        out = draw_children(counts, first, m, n_child, key)
        return out, tally.sums(out)
    counts, first, m = _c(counts, np.int32), _c(first, np.int64), _c(m, np.int64)
    out = np.empty((counts.shape[0], n_child), dtype=np.int32)
    sums = np.empty((counts.shape[0], tally.lanes.shape[1]), dtype=np.int64)
    lib.draw_tally(counts.ctypes.data, counts.shape[0], counts.shape[1], first.ctypes.data,
                   m.ctypes.data, n_child, key, out.ctypes.data, tally.lanes.ctypes.data,
                   tally.lanes.shape[1] // 16, tally.every, sums.ctypes.data)  # fmt: skip
    return out, sums[:, : tally.masks.shape[1]]


def splitmix(key: int, t: np.ndarray) -> np.ndarray:
    """Draws ``t`` (uint64) of the SplitMix64 stream ``key`` (in place on one new array)."""
    z = t + np.uint64(1)
    z *= _GOLDEN
    z += np.uint64(key)
    shifted = np.empty_like(z)
    for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB), (31, None)):
        np.right_shift(z, np.uint64(shift), out=shifted)
        z ^= shifted
        if factor is not None:
            z *= np.uint64(factor)
    return z


def bounded(u: np.ndarray, m: np.ndarray | int) -> np.ndarray:
    """floor(u·m / 2^64) for m < 2^32, in 64-bit halves: u·m = hi·m·2^32 + lo·m."""
    m = np.asarray(m, dtype=np.uint64)
    lo = u & _LOW32
    lo *= m
    lo >>= np.uint64(32)
    hi = u >> np.uint64(32)
    hi *= m
    hi += lo
    hi >>= np.uint64(32)
    return hi.view(np.int64)


def _draw_children_numpy(
    counts: np.ndarray, first: np.ndarray, m: np.ndarray, key: int, out: np.ndarray
) -> None:
    """``draw_children`` a row at a time, its draws ``_DRAWS_AT_ONCE`` at a time so that their
    temporaries stay in cache."""
    reps = counts.astype(np.int64) * m
    balanced = m.size > 0 and m.min() == m.max()
    done = 0
    for r in range(out.shape[0]):
        index = np.repeat(first, reps[r])
        width = None if balanced else np.repeat(m, reps[r])
        for a in range(0, index.size, _DRAWS_AT_ONCE):
            piece = index[a : a + _DRAWS_AT_ONCE]
            t = np.arange(done + a, done + a + piece.size, dtype=np.uint64)
            bound = m[0] if width is None else width[a : a + piece.size]
            piece += bounded(splitmix(key, t), bound)
        done += index.size
        out[r] = np.bincount(index, minlength=out.shape[1])


def window_crossings(
    block: np.ndarray,
    cols: np.ndarray,
    starts: np.ndarray,
    widths: np.ndarray,
    below: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """For each row of ``block`` and each group g (its window: the columns
    ``cols[starts[g] : starts[g] + widths[g]]``), the cumulative weights from ``below[r, g]``
    along the window: (how many lie below ``low[r, g]``, how many at most ``high[r, g]``),
    each (rows, groups) int64. Widths are at least 1."""
    block = _c(block, np.int32)
    cols, starts, widths = _c(cols, np.int64), _c(starts, np.int64), _c(widths, np.int64)
    below, low, high = _c(below, np.int64), _c(low, np.int64), _c(high, np.int64)
    lib = native()
    if lib is None:
        cum = np.cumsum(block.take(cols, axis=1), axis=1, dtype=np.int64)
        before = np.zeros(below.shape, dtype=np.int64)
        before[:, 1:] = cum[:, starts[1:] - 1]
        cum += np.repeat(below - before, widths, axis=1)
        lo = np.add.reduceat(cum < np.repeat(low, widths, axis=1), starts, axis=1, dtype=np.int64)
        hi = np.add.reduceat(cum <= np.repeat(high, widths, axis=1), starts, axis=1, dtype=np.int64)
        return lo, hi
    lo, hi = np.empty(below.shape, dtype=np.int64), np.empty(below.shape, dtype=np.int64)
    lib.window_crossings(block.ctypes.data, block.shape[0], block.shape[1], cols.ctypes.data,
                         starts.ctypes.data, widths.ctypes.data, widths.size, below.ctypes.data,
                         low.ctypes.data, high.ctypes.data, lo.ctypes.data, hi.ctypes.data)  # fmt: skip
    return lo, hi
