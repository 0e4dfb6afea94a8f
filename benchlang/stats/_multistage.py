"""Multistage bootstrap weights: how often each finest unit (a round, a trial) is drawn when
the top-level units are drawn with replacement and, inside each drawn unit, its children with
replacement, down every level of a design's clustering (Davison & Hinkley, *Bootstrap Methods
and their Application*, CUP 1997, §3.8, pp. 100-101).

Used by the headline's ratio intervals (``stats.headline``) and the two-sample comparison
(``stats.two_sample``). Weights come a block of replicates at a time, each block from its own
random stream, so that they can be drawn on several cores with the same result.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np

from benchlang.stats._weighted import BLOCK_WEIGHTS, PILOT_ROWS


def nested_units(clusters: np.ndarray) -> list[np.ndarray]:
    """For each level, every trial's unit index at that level, units numbered so that a
    unit's parent is known: level k's unit is the unique row of ``clusters[:, :k+1]``, numbered
    in lexicographic order (as ``np.unique(..., axis=0)``, with one-dimensional keys)."""
    out = []
    prefix = np.zeros(clusters.shape[0], dtype=np.int64)
    for k in range(clusters.shape[1]):
        code = _dense_codes(clusters[:, k])
        prefix = _dense_codes(prefix.astype(np.int64) * (int(code.max(initial=0)) + 1) + code)
        out.append(prefix)
    return out


def _dense_codes(x: np.ndarray) -> np.ndarray:
    """Each value's index among the sorted distinct values (``np.unique``'s inverse): for
    integers of a range not much wider than their number by counting (linear), else by
    sorting."""
    x = np.asarray(x).ravel()
    if x.size and x.dtype.kind in "iu":
        low, high = int(x.min()), int(x.max())
        if high - low <= 4 * x.size + 1024:
            present = np.bincount(x - low, minlength=high - low + 1) > 0
            code = np.cumsum(present, dtype=np.int64) - 1
            return code.astype(np.int32 if code[-1] < 2**31 else np.int64)[x - low]
    return np.unique(x, return_inverse=True)[1].ravel()


def multistage_weights(
    clusters: np.ndarray, replicates: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """All of ``multistage_blocks``' weights at once: (weights (B, L), each trial's leaf)."""
    blocks, leaf = multistage_blocks(clusters, replicates, rng)
    return np.concatenate([draw() for draw in blocks]), leaf


def multistage_blocks(
    clusters: np.ndarray, replicates: int, rng: np.random.Generator
) -> tuple[list[Callable[[], np.ndarray]], np.ndarray]:
    """Bootstrap weights of the finest units: top-level units drawn with replacement, then
    inside each drawn unit its children with replacement, down every level (Davison &
    Hinkley 1997 §3.8). A unit drawn c times gives c·m uniform draws among its m children
    (the sum of c multinomials is one multinomial of c·m draws), all parents of a level in
    one vectorised draw.

    Returns (the blocks: functions each drawing the int32 counts (b, L) of the next rows of the
    ``replicates``, at least ``PILOT_ROWS`` rows in the first, then about ``BLOCK_WEIGHTS``
    weights each; each trial's leaf). Each block draws from its own stream, spawned from
    ``rng`` (one draw of it), so blocks drawn in any order, or at once on several cores,
    give the same weights."""
    levels = nested_units(clusters)
    return level_blocks(levels, replicates, rng), levels[-1]


def level_blocks(
    levels: Sequence[np.ndarray], replicates: int, rng: np.random.Generator
) -> list[Callable[[], np.ndarray]]:
    """``multistage_blocks``' blocks, from each trial's unit at every level (``nested_units``)."""
    parents = [np.zeros(int(levels[0].max()) + 1, dtype=np.int64)]
    for parent, child in itertools.pairwise(levels):
        parent_of = np.zeros(int(child.max()) + 1, dtype=np.int64)
        parent_of[child] = parent
        if (np.diff(parent_of) < 0).any():
            raise AssertionError("units are not numbered parent by parent")
        parents.append(parent_of)
    per_block = max(1, BLOCK_WEIGHTS // parents[-1].size)
    first = min(replicates, max(PILOT_ROWS, per_block))
    sizes = [first] + [per_block] * ((replicates - first) // per_block)
    if sum(sizes) < replicates:
        sizes.append(replicates - sum(sizes))
    streams = np.random.SeedSequence(int(rng.integers(2**63))).spawn(len(sizes))

    def block(rows: int, stream: np.random.SeedSequence) -> Callable[[], np.ndarray]:
        def draw() -> np.ndarray:
            gen = np.random.default_rng(stream)
            counts = np.ones((rows, 1), dtype=np.int32)
            for parent_of in parents:
                counts = _draw_children(counts, parent_of, gen)
            return counts

        return draw

    return [block(n, seq) for n, seq in zip(sizes, streams, strict=True) if n]


_DRAWS_AT_ONCE = 1 << 18  # draws made and counted together: their indices stay cache-sized


def _draw_children(
    counts: np.ndarray, parent_of: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Per row, how often each child is drawn when each parent drawn c times draws c·m of its
    m children uniformly with replacement: (rows, children) int32 counts, a few rows at a
    time so that the draws' indices stay small beside the counts.

    Children are numbered parent by parent (``nested_units``), so a parent's draws are
    offsets into its own range; when every parent has as many children (a balanced design)
    the offsets are drawn with one scalar bound, else each with its parent's."""
    rows, n_parent = counts.shape
    n_child = parent_of.size
    m = np.bincount(parent_of, minlength=n_parent)
    first = np.cumsum(m) - m
    per_row = (counts * m).sum(axis=1)
    small = np.uint16 if int(m.max(initial=1)) <= 1 << 16 else np.int64
    out = np.empty((rows, n_child), dtype=np.int32)
    step = max(1, _DRAWS_AT_ONCE // max(1, int(per_row.max(initial=1))))
    for start in range(0, rows, step):
        c = counts[start : start + step]
        n = c.shape[0]
        base = (np.arange(n, dtype=np.intp)[:, None] * n_child + first).ravel()
        reps = (c * m).ravel()
        k = c.sum(axis=1)
        if m.min() == m.max() and (k == k[0]).all():
            # every row draws k[0] parents of m children each: the offsets as an (n, k, m)
            # array, each parent's base added by broadcasting
            offset = rng.integers(0, int(m[0]), size=(n, int(k[0]), int(m[0])), dtype=small)
            index = np.add(offset, np.repeat(base, c.ravel()).reshape(n, -1, 1)).ravel()
        elif m.min() == m.max():
            offset = rng.integers(0, int(m[0]), size=int(reps.sum()), dtype=small)
            index = np.repeat(base, reps) + offset
        else:
            offset = rng.integers(0, np.repeat(np.tile(m, n), reps), dtype=small)
            index = np.repeat(base, reps) + offset
        out[start : start + n] = np.bincount(index, minlength=n * n_child).reshape(n, n_child)
    return out
