"""What a run contributes to a history: per metric and configuration one point (the KPI's
percentile with an interval, the series KPIs, the variability score, the trial count and the
run-level independence verdict), keyed by metric x configuration x host class.

The point's value is the sample percentile the spec's KPI is about, over the configuration's
measured trials. Its interval is TriScale's variability interval across series when the spec
asks for one (Jacob et al., JSys 2021, §4.3: the spread a rerun would show), else the
distribution-free two-sided interval of that percentile from order statistics (Thompson 1936;
Le Boudec, *Performance Evaluation of Computer and Communication Systems*, 2010, §2.2.1), valid
when trials are i.i.d., which the run-level independence verdict checks.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from benchlang import __version__

if TYPE_CHECKING:
    from benchlang.report.analysis import ConfigurationAnalysis
    from benchlang.report.data import ExperimentData

VERSION_FACTS = ("benchlang", "python", "kernel", "os")


@attrs.frozen
class Point:
    """One series' point of one run (nan value or bounds: not computed, stored as null)."""

    metric: str
    configuration: str
    host_class: str
    unit: str | None
    better: str
    percentile: float
    value: float
    lower: float
    upper: float
    interval_kind: str
    series_kpis: tuple[float, ...]
    variability: float
    trials: int
    independence: str
    reasons: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.metric, self.configuration, self.host_class)


@attrs.frozen
class Run:
    """A run's facts: where in the project's history it belongs and what it ran on."""

    run_key: str
    experiment: str
    plan_hash: str | None
    commit: str | None
    branch: str | None
    date: str
    source: str
    facts: Mapping[str, Any]
    tags: Mapping[str, str]


def host_class(hosts: Mapping[str, Mapping[str, str]]) -> str:
    """The kind of machine the run measured: architecture, CPU model and cores of each host
    (``unknown`` without recorded facts); a run over several kinds joins them with ``+``."""
    kinds = set()
    for facts in hosts.values():
        parts = [facts.get(k, "") for k in ("machine", "cpu_model")]
        cores = facts.get("cores")
        kind = " ".join(p for p in parts if p) + (f" x{cores}" if cores else "")
        kinds.add(kind or "unknown")
    return " + ".join(sorted(kinds)) or "unknown"


def run_facts(data: ExperimentData) -> dict[str, Any]:
    """Hosts and versions of a stored run, as the history keeps them."""
    versions: dict[str, str] = {"benchlang (history)": __version__}
    for facts in data.hosts.values():
        for k in VERSION_FACTS:
            if k in facts:
                versions.setdefault(k, facts[k])
    return {"hosts": sorted(data.hosts), "versions": versions}


def _finite(x: float | None) -> float:
    return float(x) if x is not None and math.isfinite(x) else math.nan


def _percentile_interval(values: np.ndarray, p: float, c: float) -> tuple[float, float]:
    from benchlang.stats._orderstat import two_sided_ranks

    lo, hi, _ = two_sided_ranks(values.size, p / 100.0, c / 100.0)
    if lo is None or hi is None:
        return math.nan, math.nan
    ordered = np.sort(values)
    return float(ordered[lo - 1]), float(ordered[hi - 1])


def points_of(data: ExperimentData, kpis: Sequence[ConfigurationAnalysis]) -> list[Point]:
    """Every configuration's point of every KPI metric (``report.analysis.analyze``'s results
    and the trials they came from)."""
    table = data.table
    klass = host_class(data.hosts)
    out = []
    for r in kpis:
        mv = data.metrics[r.metric]
        mask = (table.label == r.configuration) & table.ok & table.measured
        values = mv.values[mask]
        values = values[np.isfinite(values)]
        p, c = r.kpi.percentile, r.kpi.confidence
        value = float(np.percentile(values, p)) if values.size else math.nan
        v = r.analysis.variability
        if v is not None and math.isfinite(v.lower) and math.isfinite(v.upper):
            lower, upper, kind = v.lower, v.upper, "variability"
        else:
            lower, upper = _percentile_interval(values, p, c)
            kind = f"p{p:g} {c:g}%"
        independence = r.analysis.independence
        out.append(
            Point(
                r.metric,
                r.configuration,
                klass,
                mv.metric.unit,
                mv.metric.better,
                p,
                value,
                _finite(lower),
                _finite(upper),
                kind,
                tuple(_finite(s.kpi.value) for s in r.analysis.series),
                _finite(v.relative) if v is not None else math.nan,
                int(values.size),
                "not tested"
                if independence is None
                else ("passed" if independence.passed else "failed"),
                tuple(r.analysis.configuration_reasons),
            )
        )
    return out


def run_key(plan_hash: str | None, points: Sequence[Point], source: str = "") -> str:
    """The identity of a run's results: the same store added twice has the same key."""
    digest = hashlib.sha256()
    digest.update((plan_hash or source).encode())
    for pt in points:
        fields = [*pt.key, pt.value, pt.lower, pt.upper, pt.trials, *pt.series_kpis]
        digest.update(json.dumps([repr(x) for x in fields]).encode())
    return digest.hexdigest()[:32]
