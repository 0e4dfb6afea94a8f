"""A stored experiment's trials as the samples its ``compare`` items take: the arrays a
comparison method receives (``stats.contract.ComparisonSample``), the A/B roles of Bakshy &
Frachtenberg's model (WWW 2015, §3) and a factorial analysis's terms; the statistics run in
``stats.comparison``.

For an experiment without an A/B layout the roles map as follows: the version is the
compared factor's level (first = control, or the reference); the request is the rest of
the configuration (benchmark and the other factors' levels); the host is the trial's host;
the batch is the round. The bootstrap's cluster is the spec's, or by default (``auto``) in a
layout Perflab's host clusters (benchlang.stats.ab.auto), elsewhere the coarsest of host,
series, round with at least ``min_clusters`` (5) clusters per level, or 3 for the cluster-level t
(Donald & Lang 2007); with none, nothing is claimed (Cameron, Gelbach & Miller 2008).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from benchlang import model
from benchlang.report.data import ExperimentData
from benchlang.stats.ab import ABDesign
from benchlang.stats.comparison import ComparisonResult, compare_factorial, compare_sample
from benchlang.stats.contract import ComparisonSample, Method
from benchlang.stats.registry import statistics_methods


def _codes(values: list[Any]) -> np.ndarray:
    return np.unique(np.asarray([repr(v) for v in values]), return_inverse=True)[1]


def _requests(data: ExperimentData, keep: np.ndarray, by: str) -> np.ndarray:
    """Each kept trial's request: its benchmark and every factor's level but ``by``'s."""
    t = data.table
    others = [
        (b, tuple(sorted((k, repr(v)) for k, v in lv.items() if k != by)))
        for b, lv in zip(t.benchmark[keep], np.asarray(t.levels, dtype=object)[keep], strict=True)
    ]
    return _codes(others)


def _batches(data: ExperimentData, rounds: np.ndarray) -> np.ndarray:
    """In a layout a round is one host batch; elsewhere alternate rounds stand in for batches."""
    return rounds if data.experiment.design.layout is not None else rounds % 2


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
    requests = _requests(data, keep, comparison.by)
    design = ABDesign(version, requests, _codes(list(t.host[keep])), _batches(data, t.round[keep]))
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
    series = np.asarray(t.series[keep], dtype=np.int64)
    rounds = np.asarray(t.round[keep], dtype=np.int64)
    metric = data.experiment.metric(comparison.metric)
    return ComparisonSample(
        y=np.asarray(y[keep], dtype=np.float64),
        level=index[keep],
        names=tuple(names),
        reference=ref,
        request=_requests(data, keep, comparison.by),
        host=_codes(list(t.host[keep])),
        series=series,
        round=np.unique(np.stack([series, rounds], axis=1), axis=0, return_inverse=True)[1].ravel(),
        batch=_batches(data, rounds),
        seed=data.experiment.seed,
        better=metric.better if metric is not None else "lower",
        layout=data.experiment.design.layout is not None,
    )


def compare(
    data: ExperimentData,
    comparison: model.Comparison,
    methods: Mapping[str, Method] | None = None,
) -> ComparisonResult:
    """Run the comparison's method from the statistics registry (built-in or plugin) on the
    stored trials (``stats.comparison``)."""
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
        t = data.table
        y = data.metrics[comparison.metric].values
        keep = t.ok & np.isfinite(y)
        factors = {
            name: (
                list(t.host[keep])
                if name == "host"
                else [lv.get(name) for lv, k in zip(t.levels, keep, strict=True) if k]
            )
            for name in comparison.settings["terms"]
        }
        result = compare_factorial(comparison, method, y[keep], factors, list(t.host[keep]))
        return attrs.evolve(result, package=package)
    metric = data.experiment.metric(comparison.metric)
    return compare_sample(
        comparison,
        sample_of(data, comparison),
        method,
        data.experiment.factor(comparison.by).levels,
        metric.better if metric is not None else None,
        package,
    )


def _package(catalogue: Mapping[str, Method], name: str) -> str:
    where = getattr(catalogue, "distribution", None)
    if where is None:
        return ""
    package, version = where(name)
    return f"{package} {version}"
