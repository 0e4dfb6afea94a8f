"""KPIs generalised over a sample of inputs (TriScale, Jacob et al., "TriScale: A Framework
Supporting Replicable Performance Evaluations in Networking", JSys 1(1) 2021, §5.3, Fig. 6).

When the levels of a factor are a sample of a population of inputs (network traces, prefixes,
datasets), a KPI computed on each input says nothing about inputs not sampled. TriScale
generalises by treating the inputs' KPIs as i.i.d. draws from the population's distribution
of KPIs and bounding one of its percentiles with the same distribution-free order statistic
as the KPI itself (Thompson 1936; TriScale §4.5, Eq. 1-2): with N inputs, the upper bound of
the p-th percentile at confidence C is the smallest order statistic X_(k) with
P(Bin(N, p) <= k - 1) >= C. It exists only from N >= log(1 - C) / log(p) inputs (Eq. 4);
below that the answer is refused with the number to add.

Comparisons over a population treat the inputs as blocks: the paired differences of two
levels' KPIs on the same inputs, and the distribution-free interval of their median (the
sign-test interval: Thompson 1936; Hollander, Wolfe & Chicken, Nonparametric Statistical
Methods, 3rd ed. 2014, §3.6), so the statement holds for the population of inputs, not
only the ones sampled.
"""

from __future__ import annotations

import math
from typing import Any, TypedDict

import attrs
import numpy as np

from benchlang import model
from benchlang.jsonout import undefined
from benchlang.stats._orderstat import (
    check_percent,
    min_samples,
    order_statistic_bounds,
    two_sided_ranks,
)


@attrs.frozen
class PopulationKPI:
    """A bound (``bound`` upper/lower) or interval (``both``: [lower, upper], ``value`` the
    sample percentile, as ``stats.kpi``) of the ``percentile``-th percentile of the inputs'
    KPIs at ``confidence`` (percent);
    ``achieved_confidence`` is the exact level of the chosen ranks. With fewer than ``min_n``
    inputs every number is nan and ``refusal`` says why."""

    value: float
    lower: float
    upper: float
    rank: int | None
    ranks: tuple[int, int] | None
    n: int
    min_n: int
    percentile: float
    confidence: float
    achieved_confidence: float
    bound: str
    refusal: str | None = None

    @property
    def enough(self) -> bool:
        return self.refusal is None

    def to_dict(self) -> dict[str, Any]:
        fields = {
            "value": self.value,
            "lower": self.lower,
            "upper": self.upper,
            "rank": self.rank,
            "ranks": list(self.ranks) if self.ranks else None,
            "n": self.n,
            "min_n": self.min_n,
            "percentile": self.percentile,
            "confidence": self.confidence,
            "achieved_confidence": self.achieved_confidence,
            "bound": self.bound,
            "refusal": self.refusal,
        }
        return undefined(fields, {"*": self.refusal or "not defined for this bound"})


def population_min_inputs(population: model.Population, kpi: model.Kpi) -> int:
    """The fewest inputs the population KPI of ``kpi``'s metric needs (TriScale §4.5, Eq. 4)."""
    p, c = population_settings(population, kpi)
    return min_samples(p / 100.0, c / 100.0, kpi.bound)


def population_settings(population: model.Population, kpi: model.Kpi) -> tuple[float, float]:
    """The population's percentile and confidence: its own, else the metric's KPI's."""
    return (
        kpi.percentile if population.percentile is None else population.percentile,
        kpi.confidence if population.confidence is None else population.confidence,
    )


class _Sizes(TypedDict):
    """The fields every ``PopulationKPI`` answer shares, given or refused."""

    n: int
    min_n: int
    percentile: float
    confidence: float


def population_kpi(
    input_kpis: np.ndarray, percentile: float, confidence: float, bound: str = "upper"
) -> PopulationKPI:
    """The order-statistic bound of the ``percentile``-th percentile of the inputs' KPIs at
    ``confidence`` (TriScale §5.3 with the bounds of §4.5, Eq. 1-2); ``bound`` "both" is the
    equal-tailed two-sided interval. Non-finite KPIs (an input without an answer) are left
    out and counted as missing in the refusal."""
    p = check_percent("percentile", percentile)
    c = check_percent("confidence", confidence)
    x = np.asarray(input_kpis, dtype=float).ravel()
    finite = np.sort(x[np.isfinite(x)])
    n = int(finite.size)
    need = min_samples(p, c, bound)
    nan = math.nan
    base = _Sizes(n=n, min_n=need, percentile=float(percentile), confidence=float(confidence))
    if bound == "both":
        lo, hi, achieved = two_sided_ranks(n, p, c) if n else (None, None, nan)
        if lo is not None and hi is not None:
            low, high = float(finite[lo - 1]), float(finite[hi - 1])
            return PopulationKPI(
                float(np.percentile(finite, percentile)),
                low,
                high,
                None,
                (lo, hi),
                **base,
                achieved_confidence=100.0 * achieved,
                bound=bound,
            )
    else:
        rank, achieved = order_statistic_bounds(n, p, c, bound) if n else (None, nan)
        if rank is not None:
            value = float(finite[rank - 1])
            return PopulationKPI(
                value,
                value,
                value,
                rank,
                None,
                **base,
                achieved_confidence=100.0 * achieved,
                bound=bound,
            )
    missing = x.size - n
    what = "two-sided interval" if bound == "both" else f"{bound} bound"
    refusal = (
        f"{n} input(s) with a KPI; the {what} of p{percentile:g} at {confidence:g}% needs "
        f"{need}: add {need - n} input(s)"
        + (f" ({missing} input(s) have no KPI)" if missing else "")
    )
    return PopulationKPI(
        nan, nan, nan, None, None, **base, achieved_confidence=nan, bound=bound, refusal=refusal
    )


@attrs.frozen
class PairedOverInputs:
    """The median over the population of inputs of the difference of two levels' KPIs on
    the same input (a - b), with its distribution-free two-sided interval."""

    median: float
    lower: float
    upper: float
    n: int
    min_n: int
    confidence: float
    achieved_confidence: float
    ranks: tuple[int, int] | None
    refusal: str | None = None

    def to_dict(self) -> dict[str, Any]:
        fields = {
            "median": self.median,
            "lower": self.lower,
            "upper": self.upper,
            "n": self.n,
            "min_n": self.min_n,
            "confidence": self.confidence,
            "achieved_confidence": self.achieved_confidence,
            "ranks": list(self.ranks) if self.ranks else None,
            "refusal": self.refusal,
        }
        return undefined(fields, {"*": self.refusal or "not defined"})


def paired_over_inputs(a: np.ndarray, b: np.ndarray, confidence: float) -> PairedOverInputs:
    """The sign-test interval of the median of ``a - b`` over inputs (one pair per input,
    inputs as blocks): the order statistics of the differences with ranks of the two-sided
    median interval (Thompson 1936; Hollander, Wolfe & Chicken 2014, §3.6). Needs
    N >= log((1 - C) / 2) / log(1/2) pairs (6 at 95%)."""
    c = check_percent("confidence", confidence)
    d = np.asarray(a, dtype=float).ravel() - np.asarray(b, dtype=float).ravel()
    d = np.sort(d[np.isfinite(d)])
    n = int(d.size)
    need = min_samples(0.5, c, "both")
    median = float(np.median(d)) if n else math.nan
    lo, hi, achieved = two_sided_ranks(n, 0.5, c) if n else (None, None, math.nan)
    if lo is None or hi is None:
        return PairedOverInputs(
            median,
            math.nan,
            math.nan,
            n,
            need,
            float(confidence),
            math.nan,
            None,
            f"{n} input(s) with both KPIs; a {confidence:g}% interval of the median "
            f"difference needs {need}: add {need - n} input(s)",
        )
    return PairedOverInputs(
        median,
        float(d[lo - 1]),
        float(d[hi - 1]),
        n,
        need,
        float(confidence),
        100.0 * achieved,
        (lo, hi),
    )
