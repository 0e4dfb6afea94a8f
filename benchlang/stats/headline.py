"""The headline: per configuration the KPI statistic, and ratios between configurations with
cluster-bootstrap confidence intervals that respect the design's clustering.

Sources:

* Jacob et al., "TriScale: A Framework Supporting Quantitative Evaluations of Networked
  Systems", JSys 1(1) 2021, §4.2-§4.3: a configuration is summarised by its series' KPIs and
  the variability score across series (computed in ``stats.kpi`` / ``stats.variability``;
  this module adds the comparison between configurations).
* Davison & Hinkley, *Bootstrap Methods and their Application*, CUP 1997, §3.8 (hierarchical
  data, pp. 100-101): resample the top-level units with replacement, then the units inside
  each chosen one (resampling at every stage), so the bootstrap sees every level's variation;
  their other strategy, keeping each top-level unit whole, is ``stages="top"`` here and not
  the default: it covered 93-95% where 95% was asked in four of nine designs
  (benchmarks/sim_headline_coverage.py, docs/statistics.md); Field & Welsh, "Bootstrapping clustered data", JRSS B 69(3) 2007: the cluster
  bootstrap is consistent as the number of top-level clusters grows, and too few clusters
  leave the variance underestimated.
* Hesterberg, "What teachers should know about the bootstrap", The American Statistician
  69(4) 2015, §4.2: the *expanded percentile* interval, which widens the percentile interval by
  ``sqrt(a / (a - 1)) * t_{a-1} / z`` so that small samples (here: few top-level clusters
  ``a``) do not make it too narrow.

The statistic of a configuration is its KPI percentile (the median for ``percentile 50``) of
the log metric values, computed on bootstrap weights; the ratio of two configurations is the
exponential of the difference of their log statistics. Every configuration is resampled with
the same weights in each replicate, so the rounds that pair configurations stay paired.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import attrs
import numpy as np

from benchlang.stats._special import norm_ppf, t_ppf
from benchlang.stats._weighted import (
    BLOCK_WEIGHTS,
    PILOT_ROWS,
    replicate_percentiles,
    unit_percentile,
)

MIN_CLUSTERS = 5
"""Fewer top-level units than this and no interval is given (descriptive only)."""


@attrs.frozen
class Comparison:
    """``worse`` against ``better`` (indices into the ranking's configurations): the ratio of
    their statistics, oriented to be >= 1 when the ranking holds, with its interval.

    ``lower``/``upper`` are nan when the ranking is descriptive only. ``clear`` is True when the
    interval excludes 1 (the order of the two is resolved at ``confidence``).
    """

    better: int
    worse: int
    ratio: float
    lower: float
    upper: float
    confidence: float

    @property
    def clear(self) -> bool:
        return bool(self.lower > 1.0) if math.isfinite(self.lower) else False

    def to_dict(self) -> dict:
        return {
            "better": self.better,
            "worse": self.worse,
            "ratio": self.ratio,
            "lower": None if math.isnan(self.lower) else self.lower,
            "upper": None if math.isnan(self.upper) else self.upper,
            "confidence": self.confidence,
            "clear": self.clear,
        }


@attrs.frozen
class Ranking:
    """Configurations ordered best first by their KPI statistic, and each one compared with
    the best.

    ``statistics`` is each configuration's statistic (input order), ``order`` the indices
    best first, ``comparisons`` one per configuration after the best. ``levels`` names the
    cluster levels resampled (top first) and ``units`` how many units each has.
    """

    statistics: tuple[float, ...]
    order: tuple[int, ...]
    comparisons: tuple[Comparison, ...]
    percentile: float
    confidence: float
    better: str
    levels: tuple[str, ...]
    units: tuple[int, ...]
    replicates: int
    seed: int
    descriptive_only: bool
    reasons: tuple[str, ...]

    def to_dict(self) -> dict:
        return {
            "statistics": list(self.statistics),
            "order": list(self.order),
            "comparisons": [c.to_dict() for c in self.comparisons],
            "percentile": self.percentile,
            "confidence": self.confidence,
            "better": self.better,
            "levels": list(self.levels),
            "units": list(self.units),
            "replicates": self.replicates,
            "seed": self.seed,
            "descriptive_only": self.descriptive_only,
            "reasons": list(self.reasons),
        }


def _nested_units(clusters: np.ndarray) -> list[np.ndarray]:
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
    levels = _nested_units(clusters)
    return _level_blocks(levels, replicates, rng), levels[-1]


def _level_blocks(
    levels: Sequence[np.ndarray], replicates: int, rng: np.random.Generator
) -> list[Callable[[], np.ndarray]]:
    """``multistage_blocks``' blocks, from each trial's unit at every level (``_nested_units``)."""
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

    Children are numbered parent by parent (``_nested_units``), so a parent's draws are
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


def _sorted_groups(logs: np.ndarray, config: np.ndarray, k: int) -> list[np.ndarray]:
    """Each configuration's trials, in ascending order of ``logs``."""
    out = []
    for j in range(k):
        mine = np.flatnonzero(config == j)
        out.append(mine[np.argsort(logs[mine], kind="stable")])
    return out


def expansion(units: int, confidence: float) -> float:
    """Hesterberg's (2015) widening factor of a percentile interval from ``units``
    independent units: sqrt(a/(a-1)) · t_{a-1, (1+C)/2} / z_{(1+C)/2}."""
    q = 0.5 + confidence / 200.0
    a = units
    return math.sqrt(a / (a - 1)) * t_ppf(q, a - 1) / norm_ppf(q)


def rank(
    values: np.ndarray,
    config: np.ndarray,
    clusters: np.ndarray,
    *,
    percentile: float = 50.0,
    confidence: float = 95.0,
    better: str = "lower",
    level_names: Sequence[str] | None = None,
    replicates: int = 2000,
    seed: int = 0,
    min_clusters: int = MIN_CLUSTERS,
    stages: str = "all",
) -> Ranking:
    """Rank configurations by their KPI statistic and bound each one's ratio to the best.

    ``values`` are positive metric values (one per trial; nan and non-positive values are
    left out), ``config`` each trial's configuration index 0..k-1, ``clusters`` an (n, L)
    array of each trial's unit at each design level, top first (e.g. series then round);
    levels with a single unit are dropped. ``better`` is "lower" or "higher". Intervals are
    two-sided at ``confidence`` percent, each comparison on its own (not simultaneous).

    ``stages`` is "all" (resample every level, the default) or "top" (the top level only,
    each unit kept whole: cheaper, and below nominal coverage in simulations).

    Assumptions, and what happens when they fail: at least ``min_clusters`` units at the top
    resampled level (else descriptive only: ratios without intervals), and every
    configuration measured in at least two top-level units.
    """
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    if stages not in ("all", "top"):
        raise ValueError(f"stages must be 'all' or 'top', got {stages!r}")
    if not 0 < confidence < 100 or not 0 < percentile < 100:
        raise ValueError("percentile and confidence are percents in (0, 100)")
    v = np.asarray(values, dtype=float).ravel()
    c = np.asarray(config).ravel().astype(np.int64, copy=False)
    cl = np.asarray(clusters).reshape(v.size, -1)
    names = (
        list(level_names) if level_names is not None else [f"level {i}" for i in range(cl.shape[1])]
    )
    if len(names) != cl.shape[1]:
        raise ValueError("level_names must name every column of clusters")
    k = int(c.max()) + 1 if c.size else 0
    keep = np.isfinite(v) & (v > 0)
    notes: list[str] = []
    if (~keep).any():
        notes.append(f"{int((~keep).sum())} values left out (missing or not positive)")
    if not keep.all():
        v, c, cl = v[keep], c[keep], cl[keep]
    varying = [i for i in range(cl.shape[1]) if (cl[:, i] != cl[:1, i]).any()]
    if varying:
        cl, names = cl[:, varying], [names[i] for i in varying]
    else:
        cl, names = np.arange(v.size)[:, None], ["trial"]
    nested = _nested_units(cl)
    del cl
    units = tuple(int(level.max(initial=-1)) + 1 for level in nested)
    logs = np.log(v)
    orders = _sorted_groups(logs, c, k)
    groups = [(logs[o], nested[-1][o]) for o in orders]
    stats = np.array([unit_percentile(sorted_logs, percentile) for sorted_logs, _ in groups])
    sign = 1.0 if better == "lower" else -1.0
    present = np.isfinite(stats)
    order = sorted(
        range(k), key=lambda j: (not present[j], sign * stats[j] if present[j] else 0, j)
    )
    failed: list[str] = []
    for j in range(k):
        if not present[j]:
            failed.append(f"configuration {j} has no positive values")
        elif np.unique(nested[0][c == j]).size < 2:
            failed.append(f"configuration {j} is measured in fewer than two {names[0]} units")
    if units[0] < min_clusters:
        failed.append(
            f"{units[0]} {names[0]} units are too few clusters for a bootstrap interval "
            f"(it needs at least {min_clusters})"
        )
    descriptive = bool(failed)
    lower = np.full(k, np.nan)
    upper = np.full(k, np.nan)
    best = order[0] if order else 0
    if not descriptive and k > 1:
        rng = np.random.default_rng(seed)
        blocks = _level_blocks(nested if stages == "all" else nested[:1], replicates, rng)
        if stages == "top":
            groups = [(logs[o], nested[0][o]) for o in orders]
        boot = replicate_percentiles(groups, blocks, percentile)
        diff = sign * (boot - boot[:, [best]])  # log(worse / best), >= 0 when the order holds
        estimate = sign * (stats - stats[best])
        a = (100.0 - confidence) / 200.0
        lo_q = np.nanquantile(diff, a, axis=0)
        hi_q = np.nanquantile(diff, 1.0 - a, axis=0)
        center = np.nanmedian(diff, axis=0)
        grow = expansion(units[0], confidence)
        lower = np.exp(estimate + (lo_q - center) * grow)
        upper = np.exp(estimate + (hi_q - center) * grow)
    comparisons = tuple(
        Comparison(
            best,
            j,
            float(math.exp(sign * (stats[j] - stats[best]))),
            float(lower[j]),
            float(upper[j]),
            float(confidence),
        )
        for j in order[1:]
        if present[j]
    )
    return Ranking(
        statistics=tuple(float(math.exp(s)) if np.isfinite(s) else math.nan for s in stats),
        order=tuple(order),
        comparisons=comparisons,
        percentile=float(percentile),
        confidence=float(confidence),
        better=better,
        levels=tuple(names),
        units=units,
        replicates=int(replicates),
        seed=int(seed),
        descriptive_only=descriptive,
        reasons=tuple(failed + notes),
    )
