"""KPIs generalised over a population factor's inputs (TriScale, Jacob et al. JSys 2021,
§5.3, Fig. 6): per cell (benchmark and the other factors' levels) the KPI of each input, the
population KPI over them (``stats.population.population_kpi``), and the other factors'
levels compared with the inputs as blocks (``stats.population.paired_over_inputs``)."""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined
from benchlang.report.analysis import ConfigurationAnalysis
from benchlang.report.data import ExperimentData
from benchlang.stats.population import (
    PairedOverInputs,
    PopulationKPI,
    paired_over_inputs,
    population_kpi,
    population_settings,
)

PER_INPUT = {
    True: "its one series' KPI",
    False: "the median of its series' KPIs",
}


@attrs.frozen
class PopulationResult:
    """One metric in one cell: the inputs' KPIs and the population KPI over them."""

    metric: str
    factor: str
    cell: str
    inputs: tuple[str, ...]
    input_kpis: tuple[float, ...]
    kpi: PopulationKPI
    per_input: str
    levels: dict[str, Any] = attrs.field(factory=dict)

    def line(self, unit: str | None = None) -> str:
        """``time over trace (tool=xz): p50 <= 1.23 s at 95% over 8 inputs (...)``."""
        k = self.kpi
        head = f"{self.metric} over {self.factor}" + (f" ({self.cell})" if self.cell else "") + ": "
        if not k.enough:
            return head + f"refused: {k.refusal}"
        u = f" {unit}" if unit else ""
        sign = {"upper": "<=", "lower": ">="}
        if k.bound == "both":
            value = f"p{k.percentile:g} in [{k.lower:.4g}, {k.upper:.4g}]{u}"
        else:
            value = f"p{k.percentile:g} {sign[k.bound]} {k.value:.4g}{u}"
        return head + (
            f"{value} at {k.confidence:g}% over {k.n} inputs "
            f"(exact {k.achieved_confidence:.1f}%; {k.min_n} inputs needed)"
        )

    def to_dict(self) -> dict[str, Any]:
        kpis = undefined(
            {"input_kpis": list(self.input_kpis)}, {"*": "this input's KPI is not defined"}
        )
        return {
            "metric": self.metric,
            "factor": self.factor,
            "cell": self.cell,
            "levels": dict(self.levels),
            "inputs": list(self.inputs),
            **kpis,
            "per_input": self.per_input,
            "population_kpi": self.kpi.to_dict(),
        }


@attrs.frozen
class PopulationContrast:
    """Two levels of another factor compared over the same inputs (inputs as blocks)."""

    metric: str
    factor: str
    compared: str
    a: Any
    b: Any
    cell: str
    result: PairedOverInputs
    family: int = 1
    joint_confidence: float = math.nan

    def line(self, unit: str | None = None) -> str:
        """``time, tool=b - tool=a, paired by trace: median difference ...``."""
        r = self.result
        cell = f" ({self.cell})" if self.cell else ""
        head = (
            f"{self.metric}, {self.compared}={self.a} - {self.compared}={self.b}{cell}, "
            f"paired by {self.factor}: "
        )
        if r.refusal:
            return head + f"refused: {r.refusal}"
        u = f" {unit}" if unit else ""
        held = (
            f"{r.confidence:g}% interval"
            if self.family == 1
            else f"interval at {self.joint_confidence:g}% jointly over {self.family} contrasts"
        )
        return head + (
            f"median difference {r.median:.4g}{u}, {held} "
            f"[{r.lower:.4g}, {r.upper:.4g}] over {r.n} inputs"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "factor": self.factor,
            "compared": self.compared,
            "a": self.a,
            "b": self.b,
            "cell": self.cell,
            **self.result.to_dict(),
            "family": {"contrasts": self.family, "joint_confidence": self.joint_confidence},
        }


@attrs.frozen
class PopulationAnalysis:
    results: tuple[PopulationResult, ...]
    contrasts: tuple[PopulationContrast, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kpis": [r.to_dict() for r in self.results],
            "contrasts": [c.to_dict() for c in self.contrasts],
        }


def input_kpi(r: ConfigurationAnalysis) -> float:
    """An input's KPI: its one series' KPI, or the median of its series' KPIs (as the
    record summarises several series); nan when none is defined."""
    values = np.array([s.kpi.value for s in r.analysis.series], dtype=float)
    finite = values[np.isfinite(values)]
    if values.size == 1 or finite.size == 0:
        return float(values[0]) if values.size == 1 else math.nan
    return float(np.median(finite))


def _cell(bench: str, levels: dict[str, Any], skip: set[str], several: bool) -> str:
    parts = ([bench] if several else []) + [f"{k}={v}" for k, v in levels.items() if k not in skip]
    return ", ".join(parts)


def population_analysis(
    data: ExperimentData, results: list[ConfigurationAnalysis]
) -> PopulationAnalysis | None:
    """The population KPIs and contrasts of a spec with a population factor, else None."""
    exp = data.experiment
    pop = exp.population
    if pop is None:
        return None
    configs = data.configurations()
    several = len({b for _, _, b, _ in configs}) > 1
    by_label = {(r.metric, r.configuration): r for r in results}
    out, compared = [], []
    for k in exp.kpis:
        p, c = population_settings(pop, k)
        cells: dict[tuple, list[tuple[Any, float]]] = {}
        names: dict[tuple, tuple[str, dict]] = {}
        for _, label, bench, levels in configs:
            if pop.factor not in levels or (k.metric, label) not in by_label:
                continue
            rest = {n: v for n, v in levels.items() if n != pop.factor}
            key = (bench, tuple(rest.items()))
            value = input_kpi(by_label[(k.metric, label)])
            cells.setdefault(key, []).append((levels[pop.factor], value))
            names[key] = (_cell(bench, rest, set(), several), rest)
        one_series = all(len(r.analysis.series) <= 1 for r in results if r.metric == k.metric)
        for key, pairs in cells.items():
            values = np.array([v for _, v in pairs], dtype=float)
            out.append(
                PopulationResult(
                    k.metric,
                    pop.factor,
                    names[key][0],
                    tuple(str(i) for i, _ in pairs),
                    tuple(float(v) for v in values),
                    population_kpi(values, p, c, k.bound),
                    PER_INPUT[one_series],
                    names[key][1],
                )
            )
        compared += _contrast_pairs(k.metric, pop.factor, cells, k.confidence, several)
    return PopulationAnalysis(tuple(out), tuple(_joint(compared)))


def _joint(pairs: list[tuple]) -> list[PopulationContrast]:
    """The contrasts as one family: a reader takes the list of intervals as one claim, so
    each is at 1 - (1 - C)/k (Bonferroni over the k contrasts listed, every metric's; Dunn
    1961), which also raises the inputs each needs; a family of one is as before."""
    k = len(pairs)
    out = []
    for metric, factor, name, level, first, cell, a, b, confidence in pairs:
        each = 100.0 - (100.0 - float(confidence)) / k
        result = paired_over_inputs(a, b, each)
        out.append(
            PopulationContrast(metric, factor, name, level, first, cell, result, k, confidence)
        )
    return out


def _contrast_pairs(
    metric: str, factor: str, cells: dict[tuple, list], confidence: float, several: bool
) -> list[tuple]:
    """Each other factor's levels against its first, the rest fixed, paired by input: the
    two levels' KPIs on their shared inputs."""
    out: list[tuple] = []
    keys = list(cells)
    for bench, rest in keys:
        levels = dict(rest)
        for name in levels:
            first = next(
                dict(r)[name]
                for b, r in keys
                if b == bench and all(dict(r)[m] == levels[m] for m in levels if m != name)
            )
            if levels[name] == first:
                continue
            base = dict(levels, **{name: first})
            a = dict(cells[(bench, rest)])
            b = dict(cells[(bench, tuple(base.items()))])
            shared = [i for i in a if i in b]
            cell = _cell(bench, levels, {name}, several)
            out.append(
                (
                    metric,
                    factor,
                    name,
                    levels[name],
                    first,
                    cell,
                    np.array([a[i] for i in shared]),
                    np.array([b[i] for i in shared]),
                    confidence,
                )
            )
    return out
