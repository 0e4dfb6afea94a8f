"""Comparisons of a stored experiment: the levels of one factor compared by a clustered
reweighting bootstrap (Bakshy & Frachtenberg, WWW 2015, §5), k >= 2 levels against a reference
with ratio intervals (``benchlang.stats.ab.levels``), crossed random effects (§3, two levels) or
ANOVA (DataMill).

For an experiment without an A/B layout the roles map as follows: the version is the
compared factor's level (first = control, or the reference); the request is the rest of
the configuration (benchmark and the other factors' levels); the host is the trial's host;
the batch is the round. The bootstrap's cluster is the spec's, or by default the coarsest of
host, series, round (host, round in a layout) with at least ``min_clusters`` (5) clusters per
level; with none, nothing is claimed (Cameron, Gelbach & Miller 2008).
"""

from __future__ import annotations

import math
import sys
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang import model
from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table
from benchlang.stats.ab import ABDesign, ab_bootstrap, fit_mixed, host_blocks
from benchlang.stats.ab.bootstrap import MIN_CLUSTERS
from benchlang.stats.ab.levels import compare_levels
from benchlang.stats.anova import anova


@attrs.frozen
class ComparisonResult:
    """One ``compare`` of the spec. ``levels`` holds the k-level comparison (ratios or
    differences of means against the reference level, or all pairs) for the bootstrap;
    ``bootstrap`` the paper's two-version difference (k = 2 only). ``problem`` says why
    nothing (or only estimates) could be given; ``notes`` what the reader must know."""

    comparison: model.Comparison
    control: Any
    treatment: Any
    trials: int
    bootstrap: Any = None
    mixed: Any = None
    problem: str | None = None
    levels: Any = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        out = {
            "metric": self.comparison.metric,
            "by": self.comparison.by,
            "method": self.comparison.method,
            "control": self.control,
            "treatment": self.treatment,
            "trials": self.trials,
            "problem": self.problem,
            "notes": list(self.notes),
        }
        if self.bootstrap is not None:
            out["bootstrap"] = attrs.asdict(self.bootstrap)
            out["bootstrap"]["significant"] = self.bootstrap.significant
        if self.levels is not None:
            out["levels"] = self.levels.to_dict()
        if self.mixed is not None:
            out["mixed_effects"] = {
                k: (dict(v) if isinstance(v, dict) or hasattr(v, "items") else v)
                for k, v in attrs.asdict(self.mixed).items()
            }
        return out


def _codes(values: list[Any]) -> np.ndarray:
    return np.unique(np.asarray([repr(v) for v in values]), return_inverse=True)[1]


def ab_arrays(
    data: ExperimentData, comparison: model.Comparison
) -> tuple[np.ndarray, ABDesign, int, int]:
    """Measured values and their (version, request, host, batch) roles, plus trials per side.

    Two levels only (the first two declared): the roles of Bakshy & Frachtenberg's model."""
    factor = data.experiment.factor(comparison.by)
    control, treatment = factor.levels[0], factor.levels[1]
    t = data.table
    y = data.metrics[comparison.metric].values
    level = [lv.get(comparison.by) for lv in t.levels]
    is_control = np.array([x == control for x in level], dtype=bool)
    is_treatment = np.array([x == treatment for x in level], dtype=bool)
    keep = t.ok & np.isfinite(y) & (is_control | is_treatment)
    version = is_treatment[keep].astype(np.int8)
    others = [
        (b, tuple(sorted((k, repr(v)) for k, v in lv.items() if k != comparison.by)))
        for b, lv in zip(t.benchmark[keep], np.asarray(t.levels, dtype=object)[keep], strict=True)
    ]
    # In a layout a round is one host batch; elsewhere alternate rounds stand in for batches.
    batch = t.round[keep] if data.experiment.design.layout is not None else t.round[keep] % 2
    design = ABDesign(version, _codes(others), _codes(list(t.host[keep])), batch)
    return y[keep], design, int(is_control[keep].sum()), int(is_treatment[keep].sum())


@attrs.frozen
class _Trials:
    """The compared trials: value, level index (declared order) and every clustering role."""

    y: np.ndarray
    level: np.ndarray
    request: np.ndarray
    host: np.ndarray
    series: np.ndarray
    round: np.ndarray


def level_arrays(data: ExperimentData, comparison: model.Comparison) -> _Trials:
    """The measured, successful trials of every level of the compared factor."""
    levels = list(data.experiment.factor(comparison.by).levels)
    t = data.table
    y = data.metrics[comparison.metric].values
    index = np.array(
        [
            levels.index(lv[comparison.by]) if lv.get(comparison.by) in levels else -1
            for lv in t.levels
        ],
        dtype=np.int64,
    )
    keep = t.ok & np.isfinite(y) & (index >= 0)
    others = [
        (b, tuple(sorted((k, repr(v)) for k, v in lv.items() if k != comparison.by)))
        for b, lv in zip(t.benchmark[keep], np.asarray(t.levels, dtype=object)[keep], strict=True)
    ]
    series = np.asarray(t.series[keep], dtype=np.int64)
    rounds = np.asarray(t.round[keep], dtype=np.int64)
    return _Trials(
        y=np.asarray(y[keep], dtype=np.float64),
        level=index[keep],
        request=_codes(others),
        host=_codes(list(t.host[keep])),
        series=series,
        round=np.unique(np.stack([series, rounds], axis=1), axis=0, return_inverse=True)[1].ravel(),
    )


_WHY = {
    "host": "hosts",
    "series": "series",
    "round": "rounds (one reset each; in a layout, host batches)",
    "request": "requests",
    "host_block": "host blocks",
    "none": "trials",
}


def cluster_codes_for(name: str, trials: _Trials) -> np.ndarray:
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
    setting: str, trials: _Trials, k: int, layout: bool, floor: int
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


def compare(data: ExperimentData, comparison: model.Comparison) -> ComparisonResult:
    if comparison.method == "anova":
        return _anova(data, comparison)
    factor = data.experiment.factor(comparison.by)
    settings = comparison.settings
    names = [str(x) for x in factor.levels]
    reference = settings.get("reference", factor.levels[0])
    ref = (
        list(factor.levels).index(reference)
        if reference in factor.levels
        else names.index(str(reference))
    )
    k = len(names)
    trials = level_arrays(data, comparison)
    others = [lv for i, lv in enumerate(factor.levels) if i != ref]
    base = ComparisonResult(
        comparison,
        factor.levels[ref],
        others[0] if k == 2 else tuple(others),
        int(trials.y.size),
    )
    counts = np.bincount(trials.level, minlength=k)
    if (counts < 2).any():
        thin = ", ".join(names[i] for i in np.flatnonzero(counts < 2))
        return attrs.evolve(base, problem=f"fewer than two successful trials for {thin}")
    if comparison.method == "bootstrap":
        return _bootstrap(data, comparison, base, trials, names, ref)
    if k != 2:
        return attrs.evolve(
            base,
            problem=f"mixed effects compare two versions; {comparison.by} has {k} levels (use bootstrap)",
        )
    y, design, _, _ = ab_arrays(data, comparison)
    try:
        fit = fit_mixed(y, design, settings.get("method", "auto"))
    except (ValueError, np.linalg.LinAlgError) as err:
        return attrs.evolve(base, problem=str(err))
    return attrs.evolve(base, mixed=fit)


def _bootstrap(
    data: ExperimentData,
    comparison: model.Comparison,
    base: ComparisonResult,
    trials: _Trials,
    names: list[str],
    ref: int,
) -> ComparisonResult:
    settings = comparison.settings
    k = len(names)
    floor = int(settings.get("min_clusters", MIN_CLUSTERS))
    layout = data.experiment.design.layout is not None
    name, codes, notes = choose_cluster(settings.get("cluster", "auto"), trials, k, layout, floor)
    if name is None:
        return attrs.evolve(
            base, problem="no valid bootstrap: " + notes[-1], notes=tuple(notes[:-1])
        )
    metric = data.experiment.metric(comparison.metric)
    positive = bool((trials.y > 0).all())
    scale = "ratio" if positive else "difference"
    if not positive:
        notes.append("some values are not positive: differences of means instead of ratios")
    confidence = float(settings.get("confidence", 95.0))
    levels = compare_levels(
        trials.y,
        trials.level,
        codes,
        names=names,
        reference=ref,
        pairs=settings.get("pairs", "reference"),
        scale=scale,
        cluster=name,
        replicates=settings.get("replicates", 10_000),
        weights=settings.get("weights", "poisson"),
        confidence=confidence,
        seed=data.experiment.seed,
        min_clusters=floor,
    )
    if metric is not None and scale == "ratio":
        notes.append(f"{comparison.metric}: better {metric.better}")
    out = attrs.evolve(base, levels=levels, notes=tuple(notes))
    if levels.refused:
        valid = []
        for alt in ("host", "series", "round", "request", "host_block"):
            if alt == name:
                continue
            got = min(_per_level(cluster_codes_for(alt, trials), trials.level, k))
            if got >= floor:
                valid.append(f"{alt} ({got} per level)")
        hint = f"; valid here: cluster {', '.join(valid)}" if valid else ""
        return attrs.evolve(out, problem=levels.refused + hint)
    if k != 2:
        return out
    version = (trials.level != ref).astype(np.int8)
    try:
        result = ab_bootstrap(
            trials.y,
            version,
            codes=codes,
            cluster=name,
            replicates=settings.get("replicates", 10_000),
            weights=settings.get("weights", "poisson"),
            log=settings.get("log", False),
            interval=settings.get("interval", "clt"),
            confidence=confidence / 100.0,
            seed=data.experiment.seed,
            min_clusters=floor,
        )
    except ValueError as err:
        return attrs.evolve(out, problem=str(err))
    return attrs.evolve(out, bootstrap=result)


def _anova(data: ExperimentData, comparison: model.Comparison) -> ComparisonResult:
    t = data.table
    y = data.metrics[comparison.metric].values
    keep = t.ok & np.isfinite(y)
    terms = comparison.settings["terms"]
    factors = {
        name: (
            list(t.host[keep])
            if name == "host"
            else [lv.get(name) for lv, k in zip(t.levels, keep, strict=True) if k]
        )
        for name in terms
    }
    base = ComparisonResult(comparison, None, None, int(keep.sum()))
    if keep.sum() < 3:
        return attrs.evolve(base, problem="fewer than three successful trials")
    try:
        result = anova(y[keep], factors, terms, comparison.settings["operators"])
    except (ValueError, np.linalg.LinAlgError) as err:
        return attrs.evolve(base, problem=str(err))
    return attrs.evolve(base, mixed=result)


def _better(r: ComparisonResult) -> str | None:
    note = next((n for n in r.notes if n.endswith(("better lower", "better higher"))), None)
    return note.rsplit(" ", 1)[-1] if note else None


def _f(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _ratio_words(estimate: float, better: str | None) -> str:
    if not math.isfinite(estimate) or estimate <= 0:
        return "-"
    if better == "higher":
        return f"{100 * (estimate - 1):+.3g}% ({'better' if estimate > 1 else 'worse'})"
    return f"{100 * (estimate - 1):+.3g}% ({'better' if estimate < 1 else 'worse'})"


def render_comparisons(results: list[ComparisonResult], stream: TextIO | None = None) -> None:
    out = stream or sys.stdout
    boot = [r for r in results if r.bootstrap is not None]
    if boot:
        rows = []
        for r in boot:
            b = r.bootstrap
            rel = f"{100 * b.relative_effect:+.3g}%" if b.relative_effect is not None else "-"
            rows.append(
                [
                    r.comparison.metric,
                    f"{r.comparison.by}: {r.treatment} - {r.control}",
                    _f(b.estimate),
                    rel,
                    _f(b.se),
                    f"[{b.ci_low:.4g}, {b.ci_high:.4g}]",
                    f"{100 * b.confidence:g}% {b.interval}",
                    f"{b.cluster} ({b.clusters})",
                    "yes" if b.significant else "no",
                ]
            )
        render_table(
            [
                "metric",
                "difference",
                "estimate",
                "relative",
                "SE",
                "CI",
                "interval",
                "clusters",
                "significant",
            ],
            rows,
            title="comparisons: reweighting bootstrap (Bakshy & Frachtenberg §5)",
            stream=out,
        )
        for r in boot:
            if r.bootstrap.clusters < 20 and r.bootstrap.cluster != "none":
                out.write(
                    f"note: {r.comparison.metric} by {r.comparison.by}: only {r.bootstrap.clusters} {r.bootstrap.cluster} clusters; with so few the bootstrap interval is somewhat too narrow (docs/ab-designs.md)\n"
                )
    for r in results:
        lv = r.levels
        if lv is not None and lv.refused:
            sep = "/" if lv.scale == "ratio" else "-"
            shown = ", ".join(
                f"{lv.names[p.level]} {sep} {lv.names[p.reference]} = {p.estimate:.4g}"
                for p in lv.pairs
            )
            out.write(
                f"{r.comparison.metric} by {r.comparison.by}: descriptive only (no interval, no significance): {shown}\n"
            )
            continue
        if lv is None or (len(lv.names) == 2 and lv.scale != "ratio"):
            continue
        ratio = lv.scale == "ratio"
        rows = []
        for p in lv.pairs:
            words = _ratio_words(p.estimate, _better(r)) if ratio else "-"
            rows.append(
                [
                    f"{lv.names[p.level]} {'/' if ratio else '-'} {lv.names[p.reference]}",
                    f"{p.estimate:.4g}{'x' if ratio else ''}",
                    words,
                    f"[{p.ci_low:.4g}, {p.ci_high:.4g}]",
                    p.clusters,
                    _f(p.p_adjusted),
                    "yes" if p.significant else "no",
                ]
            )
        family = (
            f"{lv.confidence:g}% simultaneous (Bonferroni over {len(lv.pairs)}: {lv.per_pair_confidence:.4g}% each)"
            if len(lv.pairs) > 1
            else f"{lv.confidence:g}%"
        )
        render_table(
            [
                "levels",
                "ratio of means" if ratio else "difference of means",
                "change",
                "CI",
                f"{lv.cluster} clusters",
                "p (adjusted)" if len(lv.pairs) > 1 else "p",
                "significant",
            ],
            rows,
            title=(
                f"{r.comparison.metric} by {r.comparison.by}: {'ratios' if ratio else 'differences'} of means, "
                f"{family} intervals; clustered bootstrap, log scale, T(G-1) (Bakshy & Frachtenberg §5; Cameron & Miller 2015)"
                if ratio
                else f"{r.comparison.metric} by {r.comparison.by}: differences of means, {family} intervals; clustered bootstrap, T(G-1)"
            ),
            stream=out,
        )
    for r in results:
        for note in r.notes:
            if not note.endswith(("better lower", "better higher")):
                out.write(f"note: {r.comparison.metric} by {r.comparison.by}: {note}\n")
    for r in results:
        if r.comparison.method == "anova" and r.mixed is not None:
            a = r.mixed
            render_table(
                ["term", "df", "sum sq", "F", "p", "η²"],
                [(x.term, x.df, x.sum_sq, x.f, x.p_value, x.eta_squared) for x in a.rows],
                title=f"ANOVA (DataMill §5): {r.comparison.metric}: {a.formula}, n = {a.n}",
                stream=out,
            )
            if not a.assumptions_hold:
                out.write(
                    f"DESCRIPTIVE ONLY: residuals are not normal (Shapiro-Wilk p = {a.residuals_normal_p:.2g}); the F tests' p-values are not trustworthy\n"
                )
            continue
        if r.mixed is not None:
            m = r.mixed
            rows = [[name, _f(v)] for name, v in m.components.items()]
            render_table(
                ["component", "variance"],
                rows,
                title=f"mixed effects ({m.method}): {r.comparison.metric} by {r.comparison.by}: effect {m.effect:.4g} ± {m.effect_se:.3g} (SE)",
                stream=out,
            )
            clipped = getattr(m, "clipped", ())
            if clipped:
                raw = ", ".join(f"{k} {m.raw_components[k]:.3g}" for k in clipped)
                out.write(
                    f"clipped at 0 (negative estimates: the component cannot be told from 0 with these data): {raw}\n"
                )
            if m.not_identifiable:
                out.write(f"not identifiable in this design: {', '.join(m.not_identifiable)}\n")
            if m.icc is not None:
                out.write(f"ICC {m.icc:.3g}, design effect {m.design_effect:.3g}\n")
        if r.problem:
            out.write(f"{r.comparison.metric} by {r.comparison.by}: not compared: {r.problem}\n")
