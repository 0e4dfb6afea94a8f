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
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from benchlang import model
from benchlang.report.data import ExperimentData
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
    family: Any = None
    """The run's family of tests this comparison belongs to (report.compare_family.FamilyPart)."""

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
        if self.family is not None:
            out["family"] = self.family.to_dict()
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
    "anova_hosts": "anova_by_host",
}
"""Detail tables whose JSON keeps its historical top-level key."""
_LEGACY = set(_TOP_LEVEL)
"""Details with a table of their own in ``compare_text.render_comparisons``; every other outcome is
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
    order = comparison.settings.get("order")
    shape = {"order": order} if order is not None else {}
    if comparison.settings.get("by") == "host":
        from benchlang.stats.anova import anova_by_host

        tables = anova_by_host(
            y[keep], factors, terms, comparison.settings["operators"], list(t.host[keep]), order
        )
        outcome = ComparisonOutcome(
            method.name, math.nan, "difference", details={"anova_hosts": tables}
        )
        return attrs.evolve(base, outcome=outcome)
    try:
        result = method.load()(y[keep], factors, terms, comparison.settings["operators"], **shape)
    except (ValueError, np.linalg.LinAlgError) as err:
        return attrs.evolve(base, problem=str(err))
    from benchlang.stats.anova import host_breakdown

    details = {"anova": result, "hosts": host_breakdown(y[keep], list(t.host[keep]))}
    outcome = ComparisonOutcome(method.name, math.nan, "difference", details=details)
    return attrs.evolve(base, outcome=outcome)
