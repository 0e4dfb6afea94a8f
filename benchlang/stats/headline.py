"""The headline: per configuration the KPI statistic, and ratios between configurations with
cluster-bootstrap confidence intervals that respect the design's clustering, jointly at the
stated confidence over every pair of configurations (``stats.simultaneous``: a single-step
studentized max-t, Westfall & Young 1993, Romano & Wolf 2005; from 3 top-level units that hold
the percentile's trials, ``takes_the_t``, the cluster-level t of Donald & Lang 2007 with the
single-step max-t of Hothorn, Bretz & Westfall 2008 over the pairs).

Sources:

* Jacob et al., "TriScale: A Framework Supporting Quantitative Evaluations of Networked
  Systems", JSys 1(1) 2021, §4.2-§4.3: a configuration is summarised by its series' KPIs and
  the variability score across series (computed in ``stats.kpi`` / ``stats.variability``;
  this module adds the comparison between configurations).
* Davison & Hinkley, *Bootstrap Methods and their Application*, CUP 1997, §3.8 (hierarchical
  data, pp. 100-101): resample the top-level units with replacement, then the units inside
  each chosen one (resampling at every stage), so the bootstrap sees every level's variation;
  their other strategy, keeping each top-level unit whole, is ``stages="top"`` here and not
  the default: it covered 93.8-94.5% where 95% was asked in three of nine designs
  (benchmarks/sim_headline_coverage.py, docs/statistics.md); Field & Welsh, "Bootstrapping
  clustered data", JRSS B 69(3) 2007: the cluster bootstrap is consistent as the number of
  top-level clusters grows, and too few clusters leave the variance underestimated.
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

import math
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.stats._multistage import level_blocks, nested_units
from benchlang.stats._special import norm_ppf, t_ppf
from benchlang.stats._weighted import cores, replicate_percentiles, unit_percentile
from benchlang.stats.ab.fewclusters import MIN_CLUSTERS_T
from benchlang.stats.cluster_t import (
    cluster_t_families,
    connected,
    jackknife_families,
    takes_the_t,
    thin_units,
    unit_levels,
    unit_statistics,
)
from benchlang.stats.simultaneous import (
    Family,
    balanced_max,
    cluster_max_t,
    column_max,
    with_the_best,
)

METHODS = {
    "pairs": "all pairs jointly (Tukey-type)",
    "mcb": "comparisons with the best (Hsu's MCB, strict bounds)",
    "alone": "each alone against the observed best (not simultaneous)",
}
"""The families ``rank`` can make its intervals hold over (``stats.simultaneous``)."""


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

    def to_dict(self) -> dict[str, Any]:
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

    ``statistics`` is each configuration's statistic (input order; on the cluster-level t its
    level over the units, ``stats.cluster_t.unit_levels``, the ratios' own), ``order`` the indices
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
    scheme: str = "paired"
    """"paired": every configuration resampled with the same weights (rounds pair them);
    "blocks": each configuration's block resampled on its own (``stats.block_ranking``)."""
    family: Family = attrs.field(factory=lambda: Family("none", 0, 95.0, 0.0))
    """How the intervals hold jointly (``stats.simultaneous``): method, family size, joint
    confidence."""

    def without_intervals(self, reason: str) -> Ranking:
        """This ranking descriptive only: ratios kept, intervals dropped, ``reason`` said."""
        return attrs.evolve(
            self,
            comparisons=tuple(
                attrs.evolve(c, lower=math.nan, upper=math.nan) for c in self.comparisons
            ),
            descriptive_only=True,
            reasons=(reason, *self.reasons),
            family=attrs.evolve(self.family, bounds=()),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme,
            "statistics": [s if math.isfinite(s) else None for s in self.statistics],
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
            "family": self.family.to_dict(),
        }


def _sorted_groups(logs: np.ndarray, config: np.ndarray, k: int) -> list[np.ndarray]:
    """Each configuration's trials, in ascending order of ``logs`` (ties in trial order); the
    configurations sorted on every core when they are large (numpy's sort releases the GIL)."""
    by_config = np.argsort(config, kind="stable")
    ends = np.cumsum(np.bincount(config, minlength=k))
    parts = np.split(by_config, ends[:-1])

    def ascending(mine: np.ndarray) -> np.ndarray:
        return mine[np.argsort(logs[mine], kind="stable")]

    workers = min(cores(), k)
    if workers < 2 or logs.size < _SORT_THREADED_FROM:
        return [ascending(mine) for mine in parts]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(ascending, parts))


_SORT_THREADED_FROM = 1 << 18  # values below which sorting in threads costs more than it saves


def _distinct_per(group: np.ndarray, unit: np.ndarray, k: int, units: int) -> np.ndarray:
    """How many distinct ``unit`` values each of the ``k`` groups has (units 0..units-1)."""
    pair = group.astype(np.int64) * units + unit
    if k * units <= 8 * pair.size + 1024:
        distinct = np.flatnonzero(np.bincount(pair, minlength=k * units))
    else:
        distinct = np.unique(pair)
    return np.bincount(distinct // units, minlength=k)


def configuration_name(config_names: Sequence[str] | None, j: int) -> str:
    """Configuration ``j`` as a reason names it: by its name where the caller gave names."""
    return f"configuration {j}" if config_names is None else config_names[j]


def best_first(statistics: np.ndarray, better: str) -> list[int]:
    """Configuration indices best first (ties in index order), those without a statistic last."""
    sign = 1.0 if better == "lower" else -1.0
    present = np.isfinite(statistics)
    return sorted(
        range(statistics.size),
        key=lambda j: (not present[j], sign * statistics[j] if present[j] else 0, j),
    )


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
    min_clusters: int | None = None,
    stages: str = "all",
    family: str = "pairs",
    few_units: str = "max-t",
    config_names: Sequence[str] | None = None,
) -> Ranking:
    """Rank configurations by their KPI statistic and bound each one's ratio to the best.

    ``values`` are positive metric values (one per trial; nan and non-positive values are
    left out), ``config`` each trial's configuration index 0..k-1, ``clusters`` an (n, L)
    array of each trial's unit at each design level, top first (e.g. series then round);
    levels with a single unit are dropped. ``better`` is "lower" or "higher". The intervals
    hold jointly at ``confidence`` percent over the ``family``: every pair (``pairs``, the
    default), so the comparisons with the best, chosen from the data, hold together; ``mcb``
    (Hsu's comparisons with the best, strict bounds: each configuration's ratio to the best of
    the others); ``alone`` (each comparison with the observed best on its own, the intervals
    the ranking printed before it was one family, kept so that
    benchmarks/sim_ranking_family.py can show what the family costs and buys). With two configurations every family is the single comparison's interval.
    The families come from the cluster-level t on one contrast per top-level unit with G - 1
    degrees of freedom (Donald & Lang 2007), never resampling the rounds across those units,
    by ``takes_the_t``: from 3 units when every configuration has ``t_unit_trials(percentile)``
    trials in each unit it is in (2 for the median, 10 for p90; the 5 series x 5 runs of the quickstart),
    and always below 5 units; else from the cluster bootstrap (a studentized maximum). On the t
    the statistics are the configurations' levels in the additive model of the per-unit
    statistics (``stats.cluster_t.unit_levels``; with every unit, the mean of the units' log percentiles), the
    levels the ratios are of. The t's critical
    value is the single-step max-t over the family when every configuration is in every unit
    (``few_units="max-t"``, ``stats.simultaneous.cluster_max_t``; Hothorn, Bretz & Westfall
    2008), else Bonferroni's (``few_units="bonferroni"``). ``min_clusters`` given replaces the
    rule: the t from 3 to ``min_clusters`` - 1 units, the bootstrap from ``min_clusters``.

    ``config_names`` name the configurations in the reasons (else "configuration j").

    ``stages`` is "all" (resample every level, the default) or "top" (the top level only,
    each unit kept whole: cheaper, and below nominal coverage in simulations).

    Assumptions, and what happens when they fail: at least 3 units at the top level (else
    descriptive only: ratios without intervals), a bootstrap from 5 units, and
    every configuration measured in at least two top-level units (three for the t).
    """
    if better not in ("lower", "higher"):
        raise ValueError(f"better must be 'lower' or 'higher', got {better!r}")
    if family not in METHODS:
        raise ValueError(f"family must be one of {', '.join(METHODS)}, got {family!r}")
    if few_units not in ("max-t", "bonferroni"):
        raise ValueError(f"few_units must be 'max-t' or 'bonferroni', got {few_units!r}")
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
    nested = nested_units(cl)
    del cl
    units = tuple(int(level.max(initial=-1)) + 1 for level in nested)
    logs = np.log(v)
    orders = _sorted_groups(logs, c, k)
    groups = [(logs[o], nested[-1][o]) for o in orders]
    stats = np.array([unit_percentile(sorted_logs, percentile) for sorted_logs, _ in groups])
    sign = 1.0 if better == "lower" else -1.0
    present = np.isfinite(stats)
    order = best_first(stats, better)
    failed: list[str] = []
    top_units = _distinct_per(c, nested[0], k, units[0])
    if min_clusters is None:
        cells = np.bincount(c * units[0] + nested[0], minlength=k * units[0])
        per_unit = cells.reshape(k, units[0])[present]
        few = takes_the_t(units[0], per_unit, percentile)
        if (why := thin_units(units[0], per_unit, percentile, names[0])) is not None:
            failed.append(why)
        elif few and not connected(np.where(per_unit.T > 0, 0.0, np.nan)):
            failed.append(
                f"the configurations do not share {names[0]} units enough to be compared "
                "(every two must be linked through units they share)"
            )
    else:
        few = MIN_CLUSTERS_T["paired"] <= units[0] < min_clusters
    # 3 on either path: a bootstrap over 2 units of a noisy configuration claimed 13-30%
    needed = MIN_CLUSTERS_T["paired"]
    for j in range(k):
        if not present[j]:
            failed.append(f"{configuration_name(config_names, j)} has no positive values")
        elif top_units[j] < needed and units[0] >= MIN_CLUSTERS_T["paired"]:
            failed.append(
                f"{configuration_name(config_names, j)} is measured in fewer than {needed} {names[0]} units"
            )
    if units[0] < MIN_CLUSTERS_T["paired"]:
        failed.append(
            f"{units[0]} {names[0]} units are too few clusters for an interval (the "
            f"cluster-level t needs at least {MIN_CLUSTERS_T['paired']})"
        )
    descriptive = bool(failed)
    best = order[0] if order else 0
    bounds = np.full((k, 2), np.nan)
    held = Family("none", 0, float(confidence), 0.0)
    ratios = sign * (stats - stats[best]) if k else stats
    if not descriptive and k > 1:
        estimate = sign * (stats[None, :] - stats[:, None])  # [c, i]: log(i / c), oriented
        size = {"pairs": k * (k - 1) // 2, "mcb": k - 1, "alone": 1}[family]
        if few:
            units_stats = sign * unit_statistics(groups, orders, nested[0], units[0], percentile)
            level = unit_levels(units_stats)
            estimate = level[None, :] - level[:, None]
            # the levels the ratios are of, and their order, so that every ratio shown is >= 1
            # (the pooled percentiles may order the configurations otherwise)
            stats = np.where(present, sign * level, np.nan)
            order = best_first(stats, better)
            best = order[0]
            complete = bool(np.isfinite(units_stats[:, present]).all())
            joint = None
            if complete and few_units == "max-t":
                joint = cluster_max_t(units[0], k, family, float(confidence))
            if complete:
                lo, hi, crit, df = cluster_t_families(
                    units_stats, estimate, confidence, size, joint
                )
            else:
                lo, hi, crit, df = jackknife_families(units_stats, estimate, confidence, size)
            pairs = np.ix_(present, present)
            off = ~np.eye(int(present.sum()), dtype=bool)
            undefined = not (
                np.isfinite(lo[pairs][off]).all() and np.isfinite(hi[pairs][off]).all()
            )
            over = (
                ""
                if size == 1
                else f", single-step max-t over {size} (Hothorn, Bretz & Westfall 2008)"
                if joint is not None
                else f", Bonferroni over {size}"
            )
            shared = "" if df == units[0] - 1 else ", the fewest units a pair shares less 1"
            shown_df = df if df is None else f"{df:g}"
            method = (
                f"{METHODS[family]}: cluster-level t over {units[0]} {names[0]} units, one "
                f"contrast each (df {shown_df}{shared}; Donald & Lang 2007){over}"
                if complete
                else f"{METHODS[family]}: levels fitted over {units[0]} {names[0]} units "
                "(configuration + unit, least squares: some configurations miss units), each "
                f"contrast's delete-one-unit jackknife SE, t with df {shown_df} (the fewest "
                f"units a pair shares less 1){over}"
            )
        else:
            undefined = False
            rng = np.random.default_rng(seed)
            blocks = level_blocks(nested if stages == "all" else nested[:1], replicates, rng)
            if stages == "top":
                groups = [(logs[o], nested[0][o]) for o in orders]
            boot = sign * replicate_percentiles(groups, blocks, percentile)
            grow = expansion(units[0], confidence)
            lo, hi, crit = _bootstrap_families(boot, estimate, grow, confidence, family)
            df = None
            method = (
                f"{METHODS[family]}: single-step studentized bootstrap max-t "
                "(Westfall & Young 1993; Romano & Wolf 2005)"
            )
        ratios = estimate[best]
        if undefined:
            descriptive = True
            failed.append(
                f"some configurations share too few {names[0]} units for an interval (fewer "
                f"than 2 in common, or removing one {names[0]} unit separates them)"
            )
        else:
            if family == "mcb":
                lower, upper = with_the_best(lo, hi)
                shown = lower, upper
            else:
                lower, upper = column_max(lo), column_max(hi)
                shown = lo[best], hi[best]
            if family == "alone":
                method = METHODS[family]
            held = Family(
                method,
                size,
                float(confidence),
                crit,
                df,
                tuple(
                    (float(math.exp(a)), float(math.exp(b)))
                    for a, b in zip(lower, upper, strict=True)
                ),
            )
            bounds = np.exp(np.stack(shown, axis=1))
    lower, upper = bounds[:, 0], bounds[:, 1]
    comparisons = tuple(
        Comparison(
            best,
            j,
            float(math.exp(ratios[j])),
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
        family=held,
    )


def _bootstrap_families(
    boot: np.ndarray, estimate: np.ndarray, grow: float, confidence: float, family: str
) -> tuple[np.ndarray, np.ndarray, float]:
    """Every pair's interval from the bootstrap replicates (R, k) of the oriented log
    statistics: each contrast's percentile interval about its bootstrap median, widened by
    Hesterberg's ``grow`` and by the studentized maximum (``balanced_max``) over its family:
    all pairs (``pairs``), the comparisons with one control (``mcb``: lo[c, i] from family c),
    or none (``alone``). Returns lo[c, i], hi[c, i] bounding log(i / c) and the largest
    critical value."""
    k = boot.shape[1]
    lo = np.full((k, k), np.nan)
    hi = np.full((k, k), np.nan)
    if family == "pairs":
        c, i = np.triu_indices(k, 1)
        low, high, d = balanced_max(boot[:, i] - boot[:, c], confidence)
        lo[c, i] = estimate[c, i] + low * grow * d
        hi[c, i] = estimate[c, i] + high * grow * d
        lo[i, c], hi[i, c] = -hi[c, i], -lo[c, i]
        return lo, hi, d
    crit = 1.0
    for row in range(k):
        others = np.flatnonzero(np.arange(k) != row)
        low, high, d = balanced_max(boot[:, others] - boot[:, [row]], confidence)
        d = d if family == "mcb" else 1.0
        lo[row, others] = estimate[row, others] + low * grow * d
        hi[row, others] = estimate[row, others] + high * grow * d
        crit = max(crit, d)
    return lo, hi, crit
