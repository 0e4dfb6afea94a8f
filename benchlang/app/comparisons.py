"""One family per run: every test a run's ``compare`` items report, over every metric, is one
family, corrected once (stats.family: Holm 1979 by default, Benjamini-Hochberg 1995 or none
with ``analysis { family { correction bh } }``). The within-``compare`` Bonferroni over level
pairs is folded into it: each compare runs at the confidence that gives its pairs the family's
per-test level, never a correction stacked on another.

Who joins and how is ``stats.comparison`` (``family_member``, ``family_tests``); this use case
runs each compare on the stored trials (``report.comparison_data.compare``) at the family's
level and attaches each one's part of the family.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs
import numpy as np

from benchlang import model
from benchlang.report.comparison_data import compare
from benchlang.report.data import ExperimentData
from benchlang.stats.comparison import (
    ComparisonResult,
    FamilyPart,
    FamilyTest,
    at_confidence,
    family_member,
    family_sentence,
    family_tests,
    planned_tests,
)
from benchlang.stats.contract import Method
from benchlang.stats.family import adjust, bonferroni_confidence
from benchlang.stats.registry import statistics_methods

DEFAULT = {"correction": "holm", "level": 5.0}
"""The family's default: Holm, at the level of its members' own confidence (the highest when
they differ), so a lone compare keeps its interval; 5% without members."""


def _confidence(c: model.Comparison, method: Method) -> float:
    return float(c.settings.get("confidence", method.defaults().get("confidence", 95.0)))


def compare_all(
    data: ExperimentData, methods: Mapping[str, Method] | None = None
) -> list[ComparisonResult]:
    """Every ``compare`` of the spec, the comparison methods' tests adjusted as one family."""
    catalogue = methods if methods is not None else statistics_methods()
    comparisons = data.experiment.comparisons
    members = [i for i, c in enumerate(comparisons) if family_member(catalogue.get(c.method))]
    declared = data.experiment.family or {}
    setting = {**DEFAULT, **declared}
    own = [_confidence(comparisons[i], catalogue[comparisons[i].method]) for i in members]
    level = setting["level"] if "level" in declared or not own else 100.0 - max(own)
    alpha = float(level) / 100.0
    correction = str(setting["correction"])
    pairs = {
        i: planned_tests(comparisons[i], len(data.experiment.factor(comparisons[i].by).levels))
        for i in members
    }
    m = sum(pairs.values())
    if m == 0:
        return [compare(data, c, catalogue) for c in comparisons]
    per_test = bonferroni_confidence(alpha, m) if correction != "none" else 100 * (1 - alpha)

    def run(level: float) -> list[ComparisonResult]:
        return [
            compare(data, at_confidence(c, level, pairs[i]) if i in pairs else c, catalogue)
            for i, c in enumerate(comparisons)
        ]

    results = run(per_test)
    tests = [(i, *t) for i in members for t in family_tests(results[i], alpha, m)]
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
