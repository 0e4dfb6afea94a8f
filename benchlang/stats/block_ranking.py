"""Ranking configurations that ran in blocks: every trial of one configuration, then every trial
of the next (hyperfine, pyperf), so no round pairs two configurations.

Then the configurations are independent samples and each one's block is resampled on its own
(Davison & Hinkley, *Bootstrap Methods and their Application*, CUP 1997, §3.2: several
samples, "stratified" resampling; §3.8 inside a block with several levels), with Hesterberg's
expanded percentile interval (The American Statistician 69(4) 2015, §4.2) for the smaller
block: :func:`benchlang.stats.two_sample.ratio_of_percentiles`, the estimator of ``benchlang
diff``. Coverage by simulation: benchmarks/sim_block_ratio.py, docs/statistics.md.

The interval is conditional. A difference between two blocks is also the drift of the machine
between the times they ran, and nothing in the data can tell the two apart (Duplyakin et al.,
"Avoiding the Ordering Trap in Systems Performance Measurement", USENIX ATC 2023, §5: the order
in which tests run changes the conclusions); the report says so in words. hyperfine's own summary
(src/benchmark/relative_speed.rs) prints the ratio of means ``± r·sqrt((s_a/m_a)² +
(s_b/m_b)²)``, the first-order propagation of the two standard deviations: the spread of a
single run's ratio, which does not shrink with more runs; this interval is on the ratio of
the KPI statistic and does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from benchlang.stats._weighted import unit_percentile
from benchlang.stats.cluster_t import MIN_CLUSTERS, unit_trials
from benchlang.stats.headline import (
    METHODS,
    Comparison,
    Ranking,
    best_first,
    configuration_name,
)
from benchlang.stats.simultaneous import Family, column_max
from benchlang.stats.two_sample import ratio_of_percentiles


def min_units(percentile: float, min_clusters: int = MIN_CLUSTERS) -> int:
    """The fewest units a block needs for an interval: ``min_clusters``, and 2.5 expected values
    beyond the percentile on its rarer side (25 for p90, 50 for p95). Below that the simulated
    coverage of a p90 fell under the 95% asked (benchmarks/sim_block_ratio.py: 92.2-94.3% at 5
    and 10 trials, 94.7% at 20 with exponential noise; 97.1% at 25; docs/statistics.md)."""
    return max(min_clusters, unit_trials(percentile))


def rank_blocks(
    values: np.ndarray,
    config: np.ndarray,
    clusters: np.ndarray,
    *,
    percentile: float = 50.0,
    confidence: float = 95.0,
    better: str = "lower",
    level_names: Sequence[str] = ("host", "series", "round"),
    replicates: int = 2000,
    seed: int = 0,
    min_clusters: int = MIN_CLUSTERS,
    config_names: Sequence[str] | None = None,
) -> Ranking:
    """:func:`benchlang.stats.headline.rank` for configurations measured in separate blocks.

    ``values``, ``config`` and ``clusters`` are as for ``rank``; inside a configuration's block
    its varying levels are resampled (pyperf's worker processes: its rounds, each kept whole),
    else its trials. Each configuration is compared with the best through the stratified bootstrap of
    the two blocks. Descriptive only (ratios without intervals) when a block has fewer units
    than ``min_units(percentile, min_clusters)`` or a configuration has no positive value.

    Jointly over the ranking: every pair's interval at ``1 - alpha / m`` over the ``m = k(k-1)/2``
    pairs (Bonferroni), so the comparisons with the best chosen from the data hold together
    (``stats.simultaneous``). With two configurations it is the one comparison's interval at
    ``confidence``.
    """
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    v = np.asarray(values, dtype=float).ravel()
    codes = np.asarray(config).ravel().astype(np.int64, copy=False)
    cl = np.asarray(clusters).reshape(v.size, -1)
    k = int(codes.max()) + 1 if codes.size else 0
    keep = np.isfinite(v) & (v > 0)
    members = [np.flatnonzero(codes == j) for j in range(k)]
    stats = np.array([unit_percentile(np.sort(np.log(v[m[keep[m]]])), percentile) for m in members])
    order = best_first(stats, better)
    best = order[0] if order else 0
    failed = [
        f"{configuration_name(config_names, j)} has no positive values"
        for j in range(k)
        if np.isnan(stats[j])
    ]
    left_out = int((~keep).sum())
    notes = [f"{left_out} values left out (missing or not positive)"] if left_out else []
    needed = min_units(percentile, min_clusters)
    ranked = [j for j in order if not np.isnan(stats[j])]
    m = max(len(ranked) * (len(ranked) - 1) // 2, 1)
    each = 100.0 - (100.0 - confidence) / m
    lo = np.full((k, k), np.nan)
    hi = np.full((k, k), np.nan)
    ratio: dict[tuple[int, int], float] = {}
    units: dict[int, tuple[int, str]] = {}
    for x, c in enumerate(ranked):
        for i in ranked[x + 1 :]:
            a, b = (c, i) if better == "lower" else (i, c)
            r = ratio_of_percentiles(
                v[members[a]],
                cl[members[a]],
                v[members[b]],
                cl[members[b]],
                percentile=percentile,
                confidence=each,
                level_names=tuple(level_names),
                replicates=replicates,
                seed=seed,
                min_clusters=needed,
            )
            units[a], units[b] = (r.units[0], r.unit_level[0]), (r.units[1], r.unit_level[1])
            ratio[c, i] = r.ratio
            lo[c, i], hi[c, i] = math.log(r.lower), math.log(r.upper)
            lo[i, c], hi[i, c] = -hi[c, i], -lo[c, i]
    family = Family("none", 0, float(confidence), 0.0)
    bounds = {j: (math.exp(lo[best, j]), math.exp(hi[best, j])) for j in ranked[1:]}
    if len(ranked) > 1:
        sub = np.ix_(ranked, ranked)
        top = np.exp(column_max(lo[sub])), np.exp(column_max(hi[sub]))
        place = {j: x for x, j in enumerate(ranked)}
        family = Family(
            f"{METHODS['pairs']}: stratified bootstraps, Bonferroni over {m} "
            f"(each pair at {each:.4g}%)",
            m,
            float(confidence),
            math.nan,
            None,
            tuple(
                (float(top[0][place[j]]), float(top[1][place[j]]))
                if j in place
                else (math.nan, math.nan)
                for j in range(k)
            ),
        )
    comparisons = [
        Comparison(best, j, ratio[best, j], *bounds[j], float(confidence)) for j in ranked[1:]
    ]
    for j, (count, level) in sorted(units.items()):
        if count < needed:
            failed.append(
                f"configuration {j} has {count} {level} units in its block: too few for a "
                f"bootstrap interval of the p{percentile:g} (it needs at least {needed})"
            )
    if failed:
        comparisons = [
            Comparison(x.better, x.worse, x.ratio, math.nan, math.nan, x.confidence)
            for x in comparisons
        ]
    smallest = min(units.values(), default=(0, "trial"))
    return Ranking(
        statistics=tuple(float(math.exp(s)) if np.isfinite(s) else math.nan for s in stats),
        order=tuple(order),
        comparisons=tuple(comparisons),
        percentile=float(percentile),
        confidence=float(confidence),
        better=better,
        levels=(smallest[1],),
        units=(smallest[0],),
        replicates=int(replicates),
        seed=int(seed),
        descriptive_only=bool(failed),
        reasons=tuple(failed + notes),
        scheme="blocks",
        family=family,
    )
