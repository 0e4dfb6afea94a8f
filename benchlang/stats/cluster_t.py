"""The ranking's few-units path: one statistic per configuration and top-level unit, each
configuration's level from them, and every pair's cluster-level t interval (Donald & Lang,
"Inference with difference-in-differences and other panel data", Rev. Econ. Stat. 89(2) 2007,
§2: aggregate to one value per cluster, then t with G - 1 degrees of freedom). Used by
``stats.headline.rank`` when ``takes_the_t`` says the units hold the percentile."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from benchlang.stats._weighted import unit_percentile
from benchlang.stats.ab.fewclusters import MIN_CLUSTERS_T
from benchlang.stats.simultaneous import bonferroni_t


def unit_trials(percentile: float) -> int:
    """The trials a unit needs for its percentile to be more than one order statistic: 2.5
    expected values beyond the percentile on its rarer side (5 for the median, 25 for p90, 50
    for p95; the rule of ``stats.block_ranking.min_units``, from benchmarks/sim_block_ratio.py).
    With fewer, a per-unit p90 is the unit's largest value or close to it, and the mean of the
    units' contrasts bounds something else than the ratio of the p90s."""
    q = percentile / 100.0
    return math.ceil(2.5 / min(q, 1.0 - q) - 1e-9)


def t_unit_trials(percentile: float) -> int:
    """The trials a unit needs for the cluster-level t (``stats.headline.takes_the_t``): one
    expected value beyond the percentile on its rarer side (2 for the median, 10 for p90, 20
    for p95), so that each unit's percentile is an estimate of that percentile and not, as
    with one-trial rounds for units, its only value (then the mean of the units' contrasts
    bounds the ratio of geometric means, not of the p90s). Fewer than ``unit_trials`` (5 at
    the median) is enough for the t, whose calibration does not rest on the unit's size: 4
    rounds a series at the median kept the t's joint error at or under 5% (docs/statistics.md,
    "Few units"), where the bootstrap maximum claimed 0.2% and found 7% of 1.05x differences."""
    q = percentile / 100.0
    return math.ceil(1.0 / min(q, 1.0 - q) - 1e-9)


MIN_CLUSTERS = 5
"""The fewest top-level units of a cluster bootstrap (``stats.two_sample``,
``stats.block_ranking``, ``rank``): below it ``rank`` takes the cluster-level t."""


def takes_the_t(units: int, per_unit: np.ndarray, percentile: float) -> bool:
    """``rank``'s few-units rule, on ``per_unit`` (configurations x top-level units: trials):
    the cluster-level t (df G - 1) from 3 units when every configuration has at least
    ``t_unit_trials`` trials in each unit it is in and, from ``MIN_CLUSTERS`` units, is in at
    least 3 units; else the studentized bootstrap maximum (``thin_units`` says when neither
    serves). docs/statistics.md, "Few units" (``--rule``; k = 3, a 1.05x difference): at 16
    series of 5 rounds the t claimed 5.0% of A/A runs (Monte Carlo SE 0.24) and found 46.6% of
    the differences; the bootstrap maximum (16 series of 4 rounds) 0.2% and 8.5%. A
    configuration missing from some units keeps the t (``cluster_t.jackknife_families``): the
    bootstrap's pooled percentiles move with the mix of units a configuration is in."""
    if units < MIN_CLUSTERS_T["paired"] or not per_unit.size:
        return False
    if int(per_unit[per_unit > 0].min()) < t_unit_trials(percentile):
        return False
    if units < MIN_CLUSTERS:
        return True
    return not ((per_unit > 0).sum(axis=1) < MIN_CLUSTERS_T["paired"]).any()


def _trials(n: int) -> str:
    return f"{n} trial" if n == 1 else f"{n} trials"


BOOTSTRAP_TRIALS = 10
"""The fewest trials of a configuration, in all, whose one-trial units the bootstrap may serve
for any percentile when more than two configurations are ranked: a median from 5 one-trial
rounds claimed a difference in 6.5-6.8% of A/A runs at k = 3 and 13-16% at k = 5, from 7 in
6.0% and 10.4%, from 10 in 1.7-3.8%; two configurations from 5 rounds 2.4-3.6% (a second
reader, 2,000-4,000 runs a cell, MC SE <= 0.5)."""


def thin_units(units: int, per_unit: np.ndarray, percentile: float, name: str) -> str | None:
    """Why no interval, when the units are too thin for the t (fewer than ``t_unit_trials``
    trials of a configuration in a unit: a one-trial round's p90 is its only value) and the
    bootstrap cannot serve either: below ``MIN_CLUSTERS`` units, or fewer than ``unit_trials``
    (and ``BOOTSTRAP_TRIALS``) trials of a configuration in all (the bootstrap of a p90 from 10 single trials claimed a
    difference in 13.8-14.8% of A/A runs, from 20 in 6.4%, from 25 in 4.0%: a second reader's
    simulation, docs/statistics.md "Few units"). None when one of them serves."""
    if units < MIN_CLUSTERS_T["paired"] or not per_unit.size:
        return None
    thinnest = int(per_unit[per_unit > 0].min())
    if thinnest >= t_unit_trials(percentile):
        return None
    total = int(per_unit.sum(axis=1).min())
    enough = unit_trials(percentile)
    if per_unit.shape[0] > 2:
        enough = max(enough, BOOTSTRAP_TRIALS)
    if units >= MIN_CLUSTERS and total >= enough:
        return None
    p = f"p{percentile:g}"
    return (
        f"a configuration has {_trials(thinnest)} in a {name} unit, too few for its {p} there "
        f"(the cluster-level t needs {t_unit_trials(percentile)}), and "
        + (
            f"{units} {name} units are too few for a bootstrap (it needs {MIN_CLUSTERS})"
            if units < MIN_CLUSTERS
            else f"{_trials(total)} in all are too few for a bootstrap of the {p} "
            f"(it needs {enough})"
        )
    )


def unit_statistics(
    groups: list[Any], orders: list[np.ndarray], top: np.ndarray, count: int, percentile: float
) -> np.ndarray:
    """Each configuration's statistic within each top-level unit, (units, k); nan where a
    configuration has no value in a unit."""
    out = np.full((count, len(groups)), np.nan)
    for j, ((sorted_logs, _), o) in enumerate(zip(groups, orders, strict=True)):
        unit = top[o]
        for g in range(count):
            out[g, j] = unit_percentile(sorted_logs[unit == g], percentile)
    return out


def unit_levels(unit_stats: np.ndarray) -> np.ndarray:
    """Each configuration's level mu_j: least squares on the additive model s_gj = a_g + mu_j over
    the cells (unit g, configuration j) that have a statistic, a_g centred to mean 0; with every
    cell present mu_j is the mean of configuration j's per-unit statistics, and mu_i - mu_c the
    mean over the units of log(i / c) within each unit, the estimate the cluster-level t is
    centred on (Donald & Lang 2007, §2: the contrast is estimated in each cluster, then
    averaged). The pooled statistics' difference is not: when the units' levels differ, a
    percentile of the pooled trials moves with the mixture of levels, a variance the units'
    contrasts do not carry (benchmarks/sim_campaign.py: 11% false claims at a nominal 5% with
    four sessions, centred on the pooled medians). With a cell missing, per-pair means over
    different units are not transitive (the best could be slower than another); the model's
    levels are one order (two-way layout with missing cells: Searle, *Linear Models for
    Unbalanced Data*, Wiley 1987, §4). nan for a configuration without a statistic."""
    count, k = unit_stats.shape
    g, j = np.nonzero(np.isfinite(unit_stats))
    design = np.zeros((g.size, count + k))
    design[np.arange(g.size), g] = 1.0
    design[np.arange(g.size), count + j] = 1.0
    coef = np.linalg.lstsq(design, unit_stats[g, j], rcond=None)[0]
    mu = coef[count:] + coef[:count].mean()
    return np.where(np.bincount(j, minlength=k) > 0, mu, np.nan)


def connected(unit_stats: np.ndarray) -> bool:
    """Whether the (unit, configuration) cells that have a statistic link every configuration
    that has one to every other through shared units: else the additive model's levels of
    configurations in separate parts are not comparable (Searle 1987, §4: connectedness)."""
    g, j = np.nonzero(np.isfinite(unit_stats))
    if not j.size:
        return False
    count = unit_stats.shape[0]
    parent = list(range(count + unit_stats.shape[1]))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(g.tolist(), (j + count).tolist(), strict=True):
        parent[root(a)] = root(b)
    return len({root(int(x) + count) for x in np.unique(j)}) == 1


def jackknife_families(
    unit_stats: np.ndarray, estimate: np.ndarray, confidence: float, comparisons: int
) -> tuple[np.ndarray, np.ndarray, float, float | None]:
    """Every pair's interval when some configuration misses some units: centred on the
    model's contrast ``estimate`` (``unit_levels``), its standard error the delete-one-unit
    jackknife of that same contrast (Efron & Stein 1981; Shao & Tu, *The Jackknife and
    Bootstrap*, Springer 1995, §1.3), t with the fewest units the pair shares less 1 degrees of
    freedom, Bonferroni over the family's ``comparisons``. The pair's own contrasts' spread would
    not match a centre that also leans on the other configurations' cells: with one
    configuration noisier (its interaction sd 0.5) and another missing from 3 of 8 series, that
    mismatch claimed a difference between two quiet configurations in 11% of A/A runs (a second
    reader's simulation; the jackknife: 1.5-1.9%). A pair whose jackknife is undefined (a unit's
    removal disconnects the layout or leaves a configuration without units) gets no bound, and
    ``rank`` then gives no interval at all (descriptive only, with the reason).
    Returns lo[c, i], hi[c, i], the largest critical value and the smallest df."""
    count, k = unit_stats.shape
    lo = np.full((k, k), -math.inf)
    hi = np.full((k, k), math.inf)
    replicates = np.full((count, k), np.nan)
    for g in range(count):
        rest = np.delete(unit_stats, g, axis=0)
        if connected(rest):
            replicates[g] = unit_levels(rest)
    finite = np.isfinite(unit_stats)
    crit, least = 0.0, math.inf
    for c in range(k):
        for i in range(k):
            shared = int((finite[:, c] & finite[:, i]).sum())
            theta = replicates[:, i] - replicates[:, c]
            if i == c or shared < 2 or not np.isfinite(theta).all():
                continue
            se = math.sqrt((count - 1) / count * float(((theta - theta.mean()) ** 2).sum()))
            t = bonferroni_t(shared - 1, comparisons, confidence)
            lo[c, i], hi[c, i] = estimate[c, i] - t * se, estimate[c, i] + t * se
            crit, least = max(crit, t), min(least, shared - 1)
    np.fill_diagonal(lo, np.nan)
    np.fill_diagonal(hi, np.nan)
    return lo, hi, crit, float(least) if math.isfinite(least) else None


def cluster_t_families(
    unit_stats: np.ndarray,
    estimate: np.ndarray,
    confidence: float,
    comparisons: int,
    joint: float | None = None,
) -> tuple[np.ndarray, np.ndarray, float, float | None]:
    """Every family's intervals from the per-unit contrasts: the pooled estimate ± t · sd / sqrt(G)
    with G - 1 degrees of freedom (Donald & Lang 2007, §2: one contrast per cluster), t the
    family's ``joint`` critical value when given (``simultaneous.cluster_max_t``: every
    configuration in every unit) else Bonferroni's at alpha / (2 m), m the ``comparisons`` of a
    family. Returns lo[c, i], hi[c, i], the largest critical value and the smallest df."""
    k = unit_stats.shape[1]
    lo = np.full((k, k), np.nan)
    hi = np.full((k, k), np.nan)
    crit, least = 0.0, math.inf
    for c in range(k):
        for i in range(k):
            if i == c:
                continue
            d = unit_stats[:, i] - unit_stats[:, c]
            d = d[np.isfinite(d)]
            df = d.size - 1
            if df < 1:
                lo[c, i], hi[c, i] = -math.inf, math.inf
                continue
            t = joint if joint is not None else bonferroni_t(df, comparisons, confidence)
            half = t * float(d.std(ddof=1)) / math.sqrt(d.size)
            lo[c, i], hi[c, i] = estimate[c, i] - half, estimate[c, i] + half
            crit, least = max(crit, t), min(least, df)
    return lo, hi, crit, float(least) if math.isfinite(least) else None
