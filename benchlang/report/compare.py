"""Comparisons of a stored experiment: each ``compare`` runs its method from the statistics
registry (``benchlang.statistics``; built-ins and plugins alike, docs/plugins.md) on the
compared factor's trials, and its outcome is rendered and serialised in one shape. The
built-ins' own tables stay: the clustered reweighting bootstrap (Bakshy & Frachtenberg, WWW
2015, §5; k >= 2 levels against a reference, ``benchlang.stats.ab.levels``), crossed random
effects (§3, two levels) and ANOVA (DataMill).

For an experiment without an A/B layout the roles map as follows: the version is the
compared factor's level (first = control, or the reference); the request is the rest of
the configuration (benchmark and the other factors' levels); the host is the trial's host;
the batch is the round. The bootstrap's cluster is the spec's, or by default (``auto``) in a
layout Perflab's host clusters (benchlang.stats.ab.auto), elsewhere the coarsest of host,
series, round with at least ``min_clusters`` (5) clusters per level, or 3 for the cluster-level t
(Donald & Lang 2007); with none, nothing is claimed (Cameron, Gelbach & Miller 2008).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any, TextIO

import attrs
import numpy as np

from benchlang import model
from benchlang.report.data import ExperimentData
from benchlang.report.table import render_table
from benchlang.stats.ab import ABDesign
from benchlang.stats.contract import ComparisonOutcome, ComparisonSample, Method, to_plain
from benchlang.stats.registry import statistics_methods


@attrs.frozen
class ComparisonResult:
    """One ``compare`` of the spec: its method's :class:`ComparisonOutcome` (the same shape for
    every method, built-in or plugin) with the compared levels. ``problem`` says why nothing
    (or only estimates) could be given; ``notes`` what the reader must know. ``package``
    names the distribution (and version) providing the method, for the record."""

    comparison: model.Comparison
    control: Any
    treatment: Any
    trials: int
    outcome: ComparisonOutcome | None = None
    problem: str | None = None
    notes: tuple[str, ...] = ()
    package: str = ""

    def _detail(self, key: str) -> Any:
        return None if self.outcome is None else self.outcome.details.get(key)

    @property
    def bootstrap(self) -> Any:
        """The two-version bootstrap difference (method bootstrap, two levels)."""
        return self._detail("bootstrap")

    @property
    def levels(self) -> Any:
        """The k-level bootstrap comparison (method bootstrap)."""
        return self._detail("levels")

    @property
    def mixed(self) -> Any:
        """The mixed-effects fit, or the ANOVA table."""
        return self._detail("mixed_effects") or self._detail("anova")

    def to_dict(self) -> dict[str, Any]:
        """The comparison and its outcome, serialised generically (``to_plain``) under
        ``result``; the built-ins' detail tables keep their top-level keys (``bootstrap``,
        ``levels``, ``mixed_effects``, which also holds the ANOVA table)."""
        out = {
            "metric": self.comparison.metric,
            "by": self.comparison.by,
            "method": self.comparison.method,
            "package": self.package,
            "control": to_plain(self.control),
            "treatment": to_plain(self.treatment),
            "trials": self.trials,
            "problem": self.problem,
            "notes": list(self.notes),
        }
        if self.outcome is None:
            return out
        result = to_plain(self.outcome)
        details = result.pop("details")
        for key, name in _TOP_LEVEL.items():
            if key in details:
                out[name] = details.pop(key)
        return {**out, "result": {**result, "details": details}}


_TOP_LEVEL = {
    "bootstrap": "bootstrap",
    "levels": "levels",
    "mixed_effects": "mixed_effects",
    "anova": "mixed_effects",
}
"""Detail tables whose JSON keeps its historical top-level key."""
_LEGACY = set(_TOP_LEVEL)
"""Details with a table of their own in ``render_comparisons``; every other outcome is
rendered in the one generic table."""


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


def sample_of(data: ExperimentData, comparison: model.Comparison) -> ComparisonSample:
    """The measured, successful trials of every level of the compared factor, with their
    clustering roles (stats.contract.ComparisonSample)."""
    factor = data.experiment.factor(comparison.by)
    levels = list(factor.levels)
    names = [str(x) for x in levels]
    reference = comparison.settings.get("reference", levels[0])
    ref = levels.index(reference) if reference in levels else names.index(str(reference))
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
    layout = data.experiment.design.layout is not None
    metric = data.experiment.metric(comparison.metric)
    return ComparisonSample(
        y=np.asarray(y[keep], dtype=np.float64),
        level=index[keep],
        names=tuple(names),
        reference=ref,
        request=_codes(others),
        host=_codes(list(t.host[keep])),
        series=series,
        round=np.unique(np.stack([series, rounds], axis=1), axis=0, return_inverse=True)[1].ravel(),
        # In a layout a round is one host batch; elsewhere alternate rounds stand in for batches.
        batch=rounds if layout else rounds % 2,
        seed=data.experiment.seed,
        better=metric.better if metric is not None else "lower",
        layout=layout,
    )


def compare(
    data: ExperimentData,
    comparison: model.Comparison,
    methods: Mapping[str, Method] | None = None,
) -> ComparisonResult:
    """Run the comparison's method from the statistics registry (built-in or plugin)."""
    catalogue = methods if methods is not None else statistics_methods()
    try:
        method = catalogue[comparison.method]
    except KeyError:
        return ComparisonResult(
            comparison,
            None,
            None,
            0,
            problem=f"the statistics method '{comparison.method}' is not installed (benchlang plugins)",
        )
    package = _package(catalogue, comparison.method)
    if method.kind == "factorial":
        return attrs.evolve(_factorial(data, comparison, method), package=package)
    factor = data.experiment.factor(comparison.by)
    sample = sample_of(data, comparison)
    k = len(sample.names)
    others = [lv for i, lv in enumerate(factor.levels) if i != sample.reference]
    base = ComparisonResult(
        comparison,
        factor.levels[sample.reference],
        others[0] if k == 2 else tuple(others),
        int(sample.y.size),
        package=package,
    )
    counts = np.bincount(sample.level, minlength=k)
    if (counts < 2).any():
        thin = ", ".join(sample.names[i] for i in np.flatnonzero(counts < 2))
        return attrs.evolve(base, problem=f"fewer than two successful trials for {thin}")
    settings = {**method.defaults(), **comparison.settings}
    need = method.needs(settings)
    if (counts < need).any():
        thin = ", ".join(f"{sample.names[i]} ({counts[i]})" for i in np.flatnonzero(counts < need))
        return attrs.evolve(
            base, problem=f"{method.name} needs at least {need} trials per level; {thin}"
        )
    outcome = method.load()(sample, settings)
    notes = list(outcome.notes)
    metric = data.experiment.metric(comparison.metric)
    if metric is not None and outcome.scale == "ratio" and "levels" in outcome.details:
        notes.append(f"{comparison.metric}: better {metric.better}")
    return attrs.evolve(base, outcome=outcome, problem=outcome.descriptive_only, notes=tuple(notes))


def record_lines(data: ExperimentData) -> tuple[str, ...]:
    """One line per bootstrap comparison for the reproducibility record: the interval's method,
    its cluster scheme and why, and what it assumes (or why it is descriptive only)."""
    lines = []
    for comparison in data.experiment.comparisons:
        if comparison.method != "bootstrap":
            continue
        r = compare(data, comparison)
        head = f"{comparison.metric} by {comparison.by}: "
        choice = r._detail("cluster_choice")
        lv = r.levels
        setting = comparison.settings.get("cluster", "auto")
        if choice is not None:
            text = f"cluster auto, {choice.method}, {choice.scheme or 'no'} clusters ({choice.why})"
            if choice.assumption:
                text += f"; CONDITIONAL: {choice.assumption}"
        elif lv is not None:
            text = (
                f"cluster {lv.cluster} ({'auto' if setting == 'auto' else 'the spec'}), "
                f"{lv.method}, {'/'.join(map(str, lv.clusters_per_level))} per level"
            )
        else:
            text = "no interval"
        if r.problem:
            text += f"; descriptive only: {r.problem}"
        lines.append(head + text)
    return tuple(lines)


def _package(catalogue: Mapping[str, Method], name: str) -> str:
    where = getattr(catalogue, "distribution", None)
    if where is None:
        return ""
    package, version = where(name)
    return f"{package} {version}"


def _factorial(
    data: ExperimentData, comparison: model.Comparison, method: Method
) -> ComparisonResult:
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
    if keep.sum() < method.min_samples:
        return attrs.evolve(base, problem="fewer than three successful trials")
    try:
        result = method.load()(y[keep], factors, terms, comparison.settings["operators"])
    except (ValueError, np.linalg.LinAlgError) as err:
        return attrs.evolve(base, problem=str(err))
    from benchlang.stats.anova import host_breakdown

    details = {"anova": result, "hosts": host_breakdown(y[keep], list(t.host[keep]))}
    outcome = ComparisonOutcome(method.name, math.nan, "difference", details=details)
    return attrs.evolve(base, outcome=outcome)


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
                    f"{b.confidence:g}% {b.interval}",
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
        if lv is None or (len(lv.names) == 2 and lv.scale != "ratio" and r.bootstrap is not None):
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
        how = (
            "cluster-level t with "
            + ", ".join(sorted({f"{p.df:.3g}" for p in lv.pairs}))
            + " df (Donald & Lang 2007: too few clusters for the bootstrap)"
            if lv.method == "cluster_t"
            else "clustered bootstrap, "
            + (
                "log scale, T(G-1) (Bakshy & Frachtenberg §5; Cameron & Miller 2015)"
                if ratio
                else "T(G-1)"
            )
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
                f"{r.comparison.metric} by {r.comparison.by}: {'ratios' if ratio else 'differences'} "
                f"of means, {family} intervals; {how}"
            ),
            stream=out,
        )
    generic = [
        r
        for r in results
        if getattr(r, "outcome", None) is not None and not _LEGACY.intersection(r.outcome.details)
    ]
    if generic:
        _render_generic(generic, out)
    for r in results:
        for note in r.notes:
            if not note.endswith(("better lower", "better higher")):
                out.write(f"note: {r.comparison.metric} by {r.comparison.by}: {note}\n")
    for r in results:
        if r.comparison.method == "anova" and r.mixed is not None:
            a = r.mixed
            render_table(
                ["term", "df", "sum sq", "mean sq", "F", "p", "η²"],
                [
                    (x.term, x.df, x.sum_sq, x.mean_sq, x.f, x.p_value, x.eta_squared)
                    for x in a.rows
                ],
                title=f"ANOVA (DataMill §5): {r.comparison.metric}: {a.formula}, n = {a.n}",
                stream=out,
            )
            out.write(f"R² {a.r_squared:.4g}, adjusted R² {a.adj_r_squared:.4g}\n")
            for note in a.dropped:
                out.write(f"note: {r.comparison.metric}: {note}\n")
            hosts = r.outcome.details.get("hosts") if r.outcome is not None else None
            if hosts is not None and len(hosts.rows) > 1:
                render_table(
                    ["host", "n", "mean", "sd"],
                    [(h.host, h.n, h.mean, h.sd) for h in hosts.rows],
                    title=f"{r.comparison.metric} per host: {hosts.between_share:.1%} of its variance lies between hosts",
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


def _interval_text(o: ComparisonOutcome) -> str:
    if not (math.isfinite(o.ci_low) and math.isfinite(o.ci_high)):
        return "-"
    achieved = (
        f" (achieved {o.achieved_confidence:.4g}%)"
        if math.isfinite(o.achieved_confidence) and abs(o.achieved_confidence - o.confidence) > 1e-9
        else ""
    )
    return f"[{o.ci_low:.4g}, {o.ci_high:.4g}] {o.confidence:g}%{achieved}"


def _render_generic(results: list[ComparisonResult], out: TextIO) -> None:
    """Any method's outcome, in the contract's one shape."""
    rows = []
    for r in results:
        o = r.outcome
        scale = {"ratio": "/", "difference": "-", "shift": "shift"}.get(o.scale, o.scale)
        verdict = o.verdict or (
            "yes" if o.significant else "no" if o.significant is not None else "-"
        )
        rows.append(
            [
                r.comparison.metric,
                f"{r.comparison.by}: {r.treatment} {scale} {r.control}",
                o.method,
                _f(o.estimate),
                _interval_text(o),
                _f(o.p_value),
                "descriptive only" if o.descriptive_only else verdict,
            ]
        )
    render_table(
        ["metric", "compared", "method", "estimate", "CI", "p", "result"],
        rows,
        title="comparisons (statistics methods: benchlang plugins --describe NAME)",
        stream=out,
    )
