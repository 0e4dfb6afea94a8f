"""The clustered reweighting bootstrap and the crossed random-effects fit as comparison methods
(Bakshy & Frachtenberg, WWW 2015, §3 and §5): the cluster choice and the calls into
:mod:`benchlang.stats.ab`, on a :class:`~benchlang.stats.contract.ComparisonSample`.

The cluster is the spec's, or by default (``auto``): in a two-version layout Perflab's host
clusters (host blocks in the request-balanced layout) with the rule of
:mod:`benchlang.stats.ab.auto`; elsewhere the coarsest of host, series, round with at least
``min_clusters`` (5) clusters per level, else the coarsest where the cluster-level t is valid
(:mod:`benchlang.stats.ab.fewclusters`, from 3 per level); with none, nothing is claimed
(Cameron, Gelbach & Miller 2008; Donald & Lang 2007).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from benchlang.stats.ab import ABDesign, ab_bootstrap, fit_mixed, host_blocks
from benchlang.stats.ab.auto import ClusterChoice, choose_layout_cluster, layout_kind
from benchlang.stats.ab.bootstrap import MIN_CLUSTERS
from benchlang.stats.ab.fewclusters import MIN_CLUSTERS_T, offered, structure
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
        codes: np.ndarray = getattr(trials, name)
        return codes
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
        if layout and name in ("request", "none") and k == 2:
            kind = layout_kind(_design(trials))
            if kind in ("request_balanced", "fully_balanced"):
                notes.append(
                    f"cluster {setting} (the spec's choice) assumes no host or host x batch effect: "
                    f"Perflab (§5.2-5.3, Table 3) shows it far too liberal in the {kind.replace('_', ' ')}"
                    " layout; cluster auto uses host clusters"
                )
        return name, cluster_codes_for(name, trials), notes
    candidates = ("host", "round") if layout else ("host", "series", "round")
    counted = {n: _per_level(cluster_codes_for(n, trials), trials.level, k) for n in candidates}
    valid = [n for n in candidates if min(counted[n]) >= floor]
    if not valid:  # too few for the bootstrap: the coarsest where the cluster-level t holds
        valid = [n for n in candidates if _small_sample_ok(n, trials, k)]
    if valid:
        n = valid[0]
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
    need = min(MIN_CLUSTERS_T.values())
    rounds = min(counted["round"])
    fix = (
        f"; {need - rounds} more round{'s' if need - rounds > 1 else ''} per level ({need} in "
        f"all) give{'' if need - rounds > 1 else 's'} a cluster-level t interval, {floor} a "
        "bootstrap one"
        if 0 < rounds < need
        else ""
    )
    notes.append(
        f"no clustering of these trials has at least {floor} clusters per level, nor "
        f"{need} for the cluster-level t (fewest per level: {counts}){fix}"
    )
    return None, None, notes


def _small_sample_ok(name: str, trials: ComparisonSample, k: int) -> bool:
    """Every compared pair's clusters allow the cluster-level t (fewclusters.MIN_CLUSTERS_T)."""
    codes = np.unique(cluster_codes_for(name, trials), return_inverse=True)[1].ravel()
    ref = trials.reference
    return all(offered(*structure(trials.level, codes, j, ref)) for j in range(k) if j != ref)


def _design(trials: ComparisonSample) -> ABDesign:
    version = (trials.level != trials.reference).astype(np.int8)
    return ABDesign(version, trials.request, trials.host, trials.batch)


def _layout_choice(
    sample: ComparisonSample, settings: Mapping[str, Any], floor: int
) -> ClusterChoice:
    """``cluster auto`` in a two-version layout (stats.ab.auto: Perflab's host clusters)."""
    y = np.log(sample.y) if bool((sample.y > 0).all()) else sample.y
    scale = "ratio" if bool((sample.y > 0).all()) else "difference"
    return choose_layout_cluster(
        y,
        _design(sample),
        scale=scale,
        seed=sample.seed,
        floor=floor,
        confidence=float(settings.get("confidence", 95.0)),
    )


def bootstrap(sample: ComparisonSample, settings: Mapping[str, Any]) -> ComparisonOutcome:
    """Every level against the reference (or all pairs): ratios of means when every value is
    positive, else differences (``details['levels']``); for two levels also the paper's
    two-version difference (``details['bootstrap']``)."""
    names = list(sample.names)
    k, ref = len(names), sample.reference
    floor = int(settings.get("min_clusters", MIN_CLUSTERS))
    setting = settings.get("cluster", "auto")
    choice = None
    codes: np.ndarray | None
    if sample.layout and k == 2 and setting in ("auto", None):
        choice = _layout_choice(sample, settings, floor)
        name = choice.scheme
        if name is None:
            return _descriptive(sample, choice)
        codes = _scheme_codes(name, sample)
        notes = [f"cluster auto chose {name}: {choice.why}"]
        if choice.assumption:
            check = "" if choice.check is None else f"; {choice.check.words()}"
            notes.append(f"CONDITIONAL: {choice.assumption}{check}")
        if choice.fix is not None:
            notes.append("without the assumption: " + choice.fix.words())
    else:
        name, codes, notes = choose_cluster(setting, sample, k, sample.layout, floor)
    if name is None or codes is None:  # None together (choose_cluster)
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
    if levels.method == "cluster_t" and choice is None:
        notes.append(
            f"{first.clusters} {name} clusters: cluster-level t interval with {first.df:.3g} df "
            "(Donald & Lang 2007; too few clusters for the bootstrap)"
        )
    details: dict[str, Any] = {"levels": levels}
    if choice is not None:
        details["cluster_choice"] = choice
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
        details=details,
    )
    if levels.refused:
        valid = []
        for alt in ("host", "series", "round", "request", "host_block"):
            if alt == name or (sample.layout and alt == "request"):
                continue
            got = min(_per_level(cluster_codes_for(alt, sample), sample.level, k))
            if got >= floor:
                valid.append(f"{alt} ({got} per level)")
        hint = f"; valid here: cluster {', '.join(valid)}" if valid else ""
        return _evolve(out, descriptive_only=levels.refused + hint, significant=None)
    if k != 2 or levels.method != "bootstrap":
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
    return _evolve(out, details={**details, "bootstrap": result})


def _scheme_codes(scheme: str, sample: ComparisonSample) -> np.ndarray:
    return (
        host_blocks(sample.request, sample.host)
        if scheme == "host_block"
        else (cluster_codes_for(scheme, sample))
    )


def _descriptive(sample: ComparisonSample, choice: ClusterChoice) -> ComparisonOutcome:
    """No valid interval: the ratio (or difference) of the two versions' means, said so."""
    ref = sample.reference
    m0 = float(sample.y[sample.level == ref].mean())
    m1 = float(sample.y[sample.level != ref].mean())
    positive = bool((sample.y > 0).all())
    why = f"no valid interval ({choice.why})"
    if choice.fix is not None:
        why += "; " + choice.fix.words()
    return ComparisonOutcome(
        "bootstrap",
        m1 / m0 if positive else m1 - m0,
        "ratio" if positive else "difference",
        descriptive_only=why,
        details={"cluster_choice": choice},
    )


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
