"""One family per run: every test a run's ``compare`` items report, over every metric, is one
family, corrected once (stats.family: Holm 1979 by default, Benjamini-Hochberg 1995 or none
with ``analysis { family { correction bh } }``). The within-``compare`` Bonferroni over level
pairs is folded into it: each compare runs at the confidence that gives its pairs the family's
per-test level, never a correction stacked on another.

Who joins: a comparison method with a ``confidence`` (its interval is recomputed at the
family's level). Its p-value is its raw one (per pair for the k-level bootstrap); a method
without a p-value joins through its interval at the Bonferroni level, as the valid p-value
alpha/m when that interval excludes no change and 1 otherwise. A planned test that gave no
answer counts as p = 1 (the family is the planned one, never shrunk by a failure). ANOVA and
mixed effects (their own tables) and equivalence (a decision at its own alpha) stay outside,
said so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from benchlang import model
from benchlang.report.compare import ComparisonResult, compare
from benchlang.report.data import ExperimentData
from benchlang.stats.contract import Method
from benchlang.stats.family import FamilyAdjustment, adjust, bonferroni_confidence
from benchlang.stats.registry import statistics_methods

DEFAULT = {"correction": "holm", "level": 5.0}
"""The family's default: Holm, at the level of its members' own confidence (the highest when
they differ), so a lone compare keeps its interval; 5% without members."""

_NAMES = {
    "holm": "Holm",
    "bh": "Benjamini-Hochberg",
    "none": "no correction",
}


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
        f"family of {tests} over {over}, {_NAMES[a.correction]} at {level} ({how}); "
        f"intervals {a.interval_confidence:.4g}% {a.interval}"
    )


def _member(method: Method | None) -> bool:
    return (
        method is not None and method.kind == "comparison" and bool(method.parameter("confidence"))
    )


def _confidence(c: model.Comparison, method: Method) -> float:
    return float(c.settings.get("confidence", method.defaults().get("confidence", 95.0)))


def _pairs(data: ExperimentData, c: model.Comparison) -> int:
    """Tests a compare plans: its level pairs (the bootstrap's k - 1 or all k(k-1)/2), else 1."""
    if c.method != "bootstrap":
        return 1
    k = len(data.experiment.factor(c.by).levels)
    return k * (k - 1) // 2 if c.settings.get("pairs") == "all" else k - 1


def _tests(r: ComparisonResult, alpha: float, m: int) -> list[tuple[str, float | None]]:
    """(label, raw p or None without an answer) of each test in a compare's result (see the module docstring)."""
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


def _at(c: model.Comparison, per_test: float, pairs: int) -> model.Comparison:
    """The compare at the confidence that gives each of its pairs ``per_test`` (percent)."""
    confidence = max(100.0 - (100.0 - per_test) * pairs, 1.0)
    return attrs.evolve(c, settings={**c.settings, "confidence": confidence})


def compare_all(
    data: ExperimentData, methods: Mapping[str, Method] | None = None
) -> list[ComparisonResult]:
    """Every ``compare`` of the spec, the comparison methods' tests adjusted as one family."""
    catalogue = methods if methods is not None else statistics_methods()
    comparisons = data.experiment.comparisons
    members = [i for i, c in enumerate(comparisons) if _member(catalogue.get(c.method))]
    declared = data.experiment.family or {}
    setting = {**DEFAULT, **declared}
    own = [_confidence(comparisons[i], catalogue[comparisons[i].method]) for i in members]
    level = setting["level"] if "level" in declared or not own else 100.0 - max(own)
    alpha = float(level) / 100.0
    correction = str(setting["correction"])
    pairs = {i: _pairs(data, comparisons[i]) for i in members}
    m = sum(pairs.values())
    if m == 0:
        return [compare(data, c, catalogue) for c in comparisons]
    per_test = bonferroni_confidence(alpha, m) if correction != "none" else 100 * (1 - alpha)

    def run(level: float) -> list[ComparisonResult]:
        return [
            compare(data, _at(c, level, pairs[i]) if i in pairs else c, catalogue)
            for i, c in enumerate(comparisons)
        ]

    results = run(per_test)
    tests = [(i, *t) for i in members for t in _tests(results[i], alpha, m)]
    adjustment = adjust(
        np.array([math.nan if p is None else p for _, _, p in tests]), correction, alpha
    )
    if correction == "bh" and abs(adjustment.interval_confidence - per_test) > 1e-12:
        results = run(adjustment.interval_confidence)
    metrics = len({comparisons[i].metric for i in members})
    outside = tuple(
        f"{c.metric} by {c.by} ({c.method})" for i, c in enumerate(comparisons) if i not in pairs
    )
    sentence = family_sentence(adjustment, metrics)
    out = list(results)
    for i in members:
        mine = [
            FamilyTest(
                label,
                adjustment.p_values[j],
                adjustment.p_adjusted[j],
                adjustment.rejected[j],
                p is not None,
            )
            for j, (k, label, p) in enumerate(tests)
            if k == i
        ]
        part = FamilyPart(tuple(mine), adjustment, metrics, sentence, outside)
        out[i] = attrs.evolve(out[i], family=part)
    return out
