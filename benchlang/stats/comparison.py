"""A ``compare`` of the spec on its sample: the method from the statistics registry
(``benchlang.statistics``; built-ins and plugins alike, docs/plugins.md) run on a
:class:`ComparisonSample`, its outcome in one shape for every method, and the comparison's
place in the run's one family of tests.

The built-ins' own tables stay: the clustered reweighting bootstrap (Bakshy & Frachtenberg,
WWW 2015, §5; k >= 2 levels against a reference, ``benchlang.stats.ab.levels``), crossed
random effects (§3, two levels) and ANOVA (DataMill, de Oliveira et al., ICPE 2013, §5).
The family is corrected once (``stats.family``: Holm 1979 by default, Benjamini & Hochberg
1995 or none); a compare's tests join it as described in :func:`family_tests`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from benchlang import model
from benchlang.stats.contract import ComparisonOutcome, ComparisonSample, Method, to_plain
from benchlang.stats.family import FamilyAdjustment

CORRECTIONS = {
    "holm": "Holm",
    "bh": "Benjamini-Hochberg",
    "none": "no correction",
}
"""The family's corrections by the name a spec gives them (``family { correction C }``)."""


@attrs.frozen
class FamilyTest:
    """One test of the run's family: its label, raw and adjusted p-value and verdict;
    ``answered`` False when the planned test gave no answer (it counts as p = 1)."""

    label: str
    p_value: float
    p_adjusted: float
    rejected: bool
    answered: bool = True


@attrs.frozen
class FamilyPart:
    """A compare's tests in the run's family, with the family's adjustment, the metrics it
    spans, its sentence and the compares left outside it."""

    tests: tuple[FamilyTest, ...]
    adjustment: FamilyAdjustment
    metrics: int
    sentence: str
    outside: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        a = self.adjustment
        return {
            "sentence": self.sentence,
            "correction": a.correction,
            "alpha": a.alpha,
            "tests": a.m,
            "metrics": self.metrics,
            "interval_confidence": a.interval_confidence,
            "interval": a.interval,
            "outside": list(self.outside),
            "members": [attrs.asdict(t) for t in self.tests],
        }


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
    family: FamilyPart | None = None
    """The run's family of tests this comparison belongs to."""

    def detail(self, key: str) -> Any:
        """The outcome's method-specific table ``key``, or None."""
        return None if self.outcome is None else self.outcome.details.get(key)

    @property
    def bootstrap(self) -> Any:
        """The two-version bootstrap difference (method bootstrap, two levels)."""
        return self.detail("bootstrap")

    @property
    def levels(self) -> Any:
        """The k-level bootstrap comparison (method bootstrap)."""
        return self.detail("levels")

    @property
    def mixed(self) -> Any:
        """The mixed-effects fit, or the ANOVA table."""
        return self.detail("mixed_effects") or self.detail("anova")

    def to_dict(self) -> dict[str, Any]:
        """The comparison and its outcome, serialised generically (``to_plain``) under
        ``result``; the built-ins' detail tables keep their top-level keys (``bootstrap``,
        ``levels``, ``mixed_effects``, which also holds the ANOVA table)."""
        out: dict[str, Any] = {
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
        for key, name in TOP_LEVEL.items():
            if key in details:
                out[name] = details.pop(key)
        return {**out, "result": {**result, "details": details}}


TOP_LEVEL = {
    "bootstrap": "bootstrap",
    "levels": "levels",
    "mixed_effects": "mixed_effects",
    "anova": "mixed_effects",
    "anova_hosts": "anova_by_host",
}
"""Detail tables whose JSON keeps its historical top-level key; each has a table of its own
in the text report, every other outcome is rendered in the one generic table."""


def compare_sample(
    comparison: model.Comparison,
    sample: ComparisonSample,
    method: Method,
    levels: Sequence[Any],
    better: str | None,
    package: str = "",
) -> ComparisonResult:
    """Run a comparison method on its sample: every level needs two successful trials, and as
    many as the method asks for (``Method.needs``); ``levels`` are the compared factor's, in
    declared order (``sample.names`` name them); ``better`` the metric's direction, noted
    beside a k-level ratio (None: the metric is not declared)."""
    k = len(sample.names)
    others = [lv for i, lv in enumerate(levels) if i != sample.reference]
    base = ComparisonResult(
        comparison,
        levels[sample.reference],
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
    outcome: ComparisonOutcome = method.load()(sample, settings)
    notes = list(outcome.notes)
    if better is not None and outcome.scale == "ratio" and "levels" in outcome.details:
        notes.append(f"{comparison.metric}: better {better}")
    return attrs.evolve(base, outcome=outcome, problem=outcome.descriptive_only, notes=tuple(notes))


def compare_factorial(
    comparison: model.Comparison,
    method: Method,
    values: np.ndarray,
    factors: Mapping[str, Sequence[object]],
    hosts: Sequence[str],
) -> ComparisonResult:
    """A factorial analysis (ANOVA, DataMill §5) of the successful trials' ``values`` with
    each term's level per trial, with the metric per host; ``by host``: one table per host
    (DataMill Table 4)."""
    base = ComparisonResult(comparison, None, None, int(values.size))
    if values.size < method.min_samples:
        return attrs.evolve(base, problem="fewer than three successful trials")
    from benchlang.stats.anova import anova_by_host, host_breakdown

    settings = comparison.settings
    terms, operators, order = settings["terms"], settings["operators"], settings.get("order")
    if settings.get("by") == "host":
        tables = anova_by_host(values, factors, terms, operators, hosts, order)
        outcome = ComparisonOutcome(
            method.name, math.nan, "difference", details={"anova_hosts": tables}
        )
        return attrs.evolve(base, outcome=outcome)
    shape = {"order": order} if order is not None else {}
    try:
        result = method.load()(values, factors, terms, operators, **shape)
    except (ValueError, np.linalg.LinAlgError) as err:
        return attrs.evolve(base, problem=str(err))
    details = {"anova": result, "hosts": host_breakdown(values, hosts)}
    outcome = ComparisonOutcome(method.name, math.nan, "difference", details=details)
    return attrs.evolve(base, outcome=outcome)


def family_sentence(adjustment: FamilyAdjustment, metrics: int) -> str:
    """The family in words: "family of 6 tests over 3 metrics, Holm at 5%; ...intervals"."""
    a = adjustment
    tests = f"{a.m} test{'s' if a.m != 1 else ''}"
    over = f"{metrics} metric{'s' if metrics != 1 else ''}"
    level = f"{100 * a.alpha:g}%"
    if a.correction == "none":
        return f"family of {tests} over {over}, no correction: each test at {level}"
    how = "FWER" if a.correction == "holm" else "FDR"
    return (
        f"family of {tests} over {over}, {CORRECTIONS[a.correction]} at {level} ({how}); "
        f"intervals {a.interval_confidence:.4g}% {a.interval}"
    )


def family_member(method: Method | None) -> bool:
    """A comparison method with a ``confidence`` joins the family (its interval is recomputed
    at the family's level); ANOVA, mixed effects and equivalence stay outside."""
    return (
        method is not None and method.kind == "comparison" and bool(method.parameter("confidence"))
    )


def planned_tests(comparison: model.Comparison, levels: int) -> int:
    """Tests a compare plans: its level pairs (the bootstrap's k - 1, or all k(k-1)/2), else 1."""
    if comparison.method != "bootstrap":
        return 1
    k = levels
    return k * (k - 1) // 2 if comparison.settings.get("pairs") == "all" else k - 1


def at_confidence(comparison: model.Comparison, per_test: float, pairs: int) -> model.Comparison:
    """The compare at the confidence that gives each of its pairs ``per_test`` (percent): the
    within-compare Bonferroni over level pairs folded into the family, never stacked on it."""
    confidence = max(100.0 - (100.0 - per_test) * pairs, 1.0)
    return attrs.evolve(comparison, settings={**comparison.settings, "confidence": confidence})


def family_tests(r: ComparisonResult, alpha: float, m: int) -> list[tuple[str, float | None]]:
    """(label, raw p or None without an answer) of each test in a compare's result. Its p-value
    is its raw one (per pair for the k-level bootstrap); a method without a p-value joins
    through its interval at the Bonferroni level, as the valid p-value alpha/m when that
    interval excludes no change and 1 otherwise. A planned test that gave no answer counts as
    p = 1 (the family is the planned one, never shrunk by a failure)."""
    head = f"{r.comparison.metric} by {r.comparison.by}"
    lv = r.levels
    if r.outcome is not None and r.outcome.descriptive_only is None and lv is not None:
        sep = "/" if lv.scale == "ratio" else "-"
        return [
            (f"{head}: {lv.names[p.level]} {sep} {lv.names[p.reference]}", p.p_value)
            for p in lv.pairs
        ]
    label = f"{head}: {r.treatment} vs {r.control}"
    o = r.outcome
    if o is None or o.descriptive_only is not None or r.problem:
        return [(label, None)]
    if o.p_value is not None:
        return [(label, o.p_value)]
    return [(label, alpha / m if o.significant else 1.0)]
