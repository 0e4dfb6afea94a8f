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
from typing import Any

import numpy as np

from benchlang.stats._kernels import Tally, draw_children, draw_tally
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
            return np.asarray(code.astype(np.int32 if code[-1] < 2**31 else np.int64)[x - low])
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
    one run of draws (``_kernels.draw_children``).

    Returns (the blocks: functions each drawing the int32 counts (b, L) of the next rows of the
    ``replicates``, at least ``PILOT_ROWS`` rows in the first, then about ``BLOCK_WEIGHTS``
    weights each; each trial's leaf). Each block draws from its own streams (a SplitMix64 key
    per level), spawned from ``rng`` (one draw of it), so blocks drawn in any order, or at once
    on several cores, give the same weights."""
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
    # children are numbered parent by parent: each parent's m children start at first
    stages = []
    for parent_of in parents:
        m = np.bincount(parent_of)
        stages.append((np.cumsum(m) - m, m, parent_of.size))
    per_block = max(1, BLOCK_WEIGHTS // parents[-1].size)
    first = min(replicates, max(PILOT_ROWS, per_block))
    sizes = [first] + [per_block] * ((replicates - first) // per_block)
    if sum(sizes) < replicates:
        sizes.append(replicates - sum(sizes))
    streams = np.random.SeedSequence(int(rng.integers(2**63))).spawn(len(sizes))
    return [_Block(n, seq, stages) for n, seq in zip(sizes, streams, strict=True) if n]


class _Block:
    """``rows`` replicates drawn from their own streams (a SplitMix64 key per level): called,
    the int32 counts (rows, L); ``tallied``, also their sums under a ``Tally`` of the leaves,
    counted while drawing where C can (``_kernels.draw_tally``)."""

    def __init__(self, rows: int, stream: np.random.SeedSequence, stages: list[Any]) -> None:
        self.rows, self.stream, self.stages = rows, stream, stages

    def __call__(self) -> np.ndarray:
        return self.tallied(None)[0]

    def tallied(self, tally: Tally | None) -> tuple[np.ndarray, np.ndarray | None]:
        keys = self.stream.generate_state(len(self.stages), np.uint64)
        counts = np.ones((self.rows, 1), dtype=np.int32)
        for (starts, m, n_child), key in zip(self.stages[:-1], keys[:-1], strict=True):
            counts = draw_children(counts, starts, m, n_child, int(key))
        starts, m, n_child = self.stages[-1]
        if tally is None:
            return draw_children(counts, starts, m, n_child, int(keys[-1])), None
        return draw_tally(counts, starts, m, n_child, int(keys[-1]), tally)
