"""The clustered reweighting bootstrap and the crossed random-effects fit as comparison methods
(Bakshy & Frachtenberg, WWW 2015, §3 and §5): the cluster choice and the calls into
:mod:`benchlang.stats.ab`, on a :class:`~benchlang.stats.contract.ComparisonSample`.

The cluster is the spec's, or by default the coarsest of host, series, round (host, round in a
layout) with at least ``min_clusters`` (5) clusters per level; with none, nothing is claimed
(Cameron, Gelbach & Miller 2008).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from benchlang.stats.ab import ABDesign, ab_bootstrap, fit_mixed, host_blocks
from benchlang.stats.ab.bootstrap import MIN_CLUSTERS
from benchlang.stats.ab.levels import compare_levels
from benchlang.stats.contract import ComparisonOutcome, ComparisonSample

_WHY = {
    "host": "hosts",
    "series": "series",
    "round": "rounds (one reset each; in a layout, host batches)",
    "request": "requests",
    "host_block": "host blocks",
    "none": "trials",
}


def cluster_codes_for(name: str, trials: ComparisonSample) -> np.ndarray:
    """Per-trial cluster ids of a named scheme (``iid`` is ``none``)."""
    if name in ("none", "iid"):
        return np.arange(trials.y.size)
    if name == "host_block":
        return host_blocks(trials.request, trials.host)
    if name in ("host", "series", "round", "request"):
        return getattr(trials, name)
    raise ValueError(f"unknown cluster {name!r}")


def _per_level(codes: np.ndarray, level: np.ndarray, k: int) -> list[int]:
    return [int(np.unique(codes[level == v]).size) for v in range(k)]


def choose_cluster(
    setting: str | None, trials: ComparisonSample, k: int, layout: bool, floor: int
) -> tuple[str | None, np.ndarray | None, list[str]]:
    """The cluster scheme: the spec's, or (``auto``, the default) the coarsest of host, series
    (not in a layout), round whose units hold every level at least ``floor`` times. Returns
    (name, codes, notes); name None when no scheme is valid (the notes then say why)."""
    notes: list[str] = []
    if setting not in ("auto", None):
        name = "none" if setting == "iid" else setting
        return name, cluster_codes_for(name, trials), notes
    candidates = ("host", "round") if layout else ("host", "series", "round")
    counted = {n: _per_level(cluster_codes_for(n, trials), trials.level, k) for n in candidates}
    for n in candidates:
        if min(counted[n]) >= floor:
            skipped = [
                c
                for c in candidates[: candidates.index(n)]
                if np.unique(cluster_codes_for(c, trials)).size > 1
            ]
            for c in skipped:
                notes.append(
                    f"cluster auto chose {n}: the {np.unique(cluster_codes_for(c, trials)).size} {_WHY[c]} "
                    f"are too few clusters, so variation between {_WHY[c].split(' (')[0]} is not in the interval"
                )
            return n, cluster_codes_for(n, trials), notes
    counts = "; ".join(f"{n}: {min(counted[n])}" for n in candidates)
    notes.append(
        f"no clustering of these trials has at least {floor} clusters per level (fewest per level: {counts})"
    )
    return None, None, notes


def bootstrap(sample: ComparisonSample, settings: Mapping[str, Any]) -> ComparisonOutcome:
    """Every level against the reference (or all pairs): ratios of means when every value is
    positive, else differences (``details['levels']``); for two levels also the paper's
    two-version difference (``details['bootstrap']``)."""
    names = list(sample.names)
    k, ref = len(names), sample.reference
    floor = int(settings.get("min_clusters", MIN_CLUSTERS))
    name, codes, notes = choose_cluster(
        settings.get("cluster", "auto"), sample, k, sample.layout, floor
    )
    if name is None:
        return ComparisonOutcome(
            "bootstrap",
            math.nan,
            "ratio",
            notes=tuple(notes[:-1]),
            descriptive_only="no valid bootstrap: " + notes[-1],
        )
    positive = bool((sample.y > 0).all())
    scale = "ratio" if positive else "difference"
    if not positive:
        notes.append("some values are not positive: differences of means instead of ratios")
    confidence = float(settings.get("confidence", 95.0))
    levels = compare_levels(
        sample.y,
        sample.level,
        codes,
        names=names,
        reference=ref,
        pairs=settings.get("pairs", "reference"),
        scale=scale,
        cluster=name,
        replicates=settings.get("replicates", 10_000),
        weights=settings.get("weights", "poisson"),
        confidence=confidence,
        seed=sample.seed,
        min_clusters=floor,
    )
    first = levels.pairs[0]
    out = ComparisonOutcome(
        "bootstrap",
        first.estimate,
        scale,
        ci_low=first.ci_low,
        ci_high=first.ci_high,
        confidence=confidence,
        significant=bool(first.significant),
        p_value=first.p_adjusted,
        notes=tuple(notes),
        details={"levels": levels},
    )
    if levels.refused:
        valid = []
        for alt in ("host", "series", "round", "request", "host_block"):
            if alt == name:
                continue
            got = min(_per_level(cluster_codes_for(alt, sample), sample.level, k))
            if got >= floor:
                valid.append(f"{alt} ({got} per level)")
        hint = f"; valid here: cluster {', '.join(valid)}" if valid else ""
        return _evolve(out, descriptive_only=levels.refused + hint, significant=None)
    if k != 2:
        return out
    version = (sample.level != ref).astype(np.int8)
    try:
        result = ab_bootstrap(
            sample.y,
            version,
            codes=codes,
            cluster=name,
            replicates=settings.get("replicates", 10_000),
            weights=settings.get("weights", "poisson"),
            log=settings.get("log", False),
            interval=settings.get("interval", "clt"),
            confidence=confidence,
            seed=sample.seed,
            min_clusters=floor,
        )
    except ValueError as err:
        return _evolve(out, descriptive_only=str(err))
    return _evolve(out, details={"levels": levels, "bootstrap": result})


def mixed_effects(sample: ComparisonSample, settings: Mapping[str, Any]) -> ComparisonOutcome:
    """Treatment minus control under crossed random effects (two levels only)."""
    k = len(sample.names)
    if k != 2:
        return ComparisonOutcome(
            "mixed_effects",
            math.nan,
            "difference",
            descriptive_only=f"mixed effects compare two versions; there are {k} levels (use bootstrap)",
        )
    version = (sample.level != sample.reference).astype(np.int8)
    design = ABDesign(version, sample.request, sample.host, sample.batch)
    try:
        fit = fit_mixed(sample.y, design, settings.get("method", "auto"))
    except (ValueError, np.linalg.LinAlgError) as err:
        return ComparisonOutcome("mixed_effects", math.nan, "difference", descriptive_only=str(err))
    return ComparisonOutcome(
        "mixed_effects",
        float(fit.effect),
        "difference",
        details={"mixed_effects": fit},
    )


def _evolve(outcome: ComparisonOutcome, **changes: Any) -> ComparisonOutcome:
    import attrs

    return attrs.evolve(outcome, **changes)
