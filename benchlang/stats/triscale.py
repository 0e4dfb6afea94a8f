"""Spec-driven TriScale analysis of one metric of one configuration (§4.2-§4.5).

Source: Jacob et al., JSys 1(1) 2021: KPI per series (§4.2, §4.5 Eq. 1-3), independence of
metric values before a KPI and of KPIs before a variability score (§4.5), variability
score across series (§4.3). Results whose assumptions fail are flagged descriptive only.

Independence is judged for the whole run (``stats.run_independence``: one calibrated family
instead of a test per series); TriScale's per-series tests stay computed and shown, and decide
only on request (``per_series_independence``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs
import numpy as np

from benchlang.stats.kpi import KPI, kpi, kpis
from benchlang.stats.run_independence import RUN_ALPHA, RunIndependence, per_series_note
from benchlang.stats.variability import Variability, variability


@attrs.frozen
class SeriesKPI:
    """The KPI of one series, with how many of its trials did not converge."""

    series: int
    kpi: KPI
    trials: int
    not_converged: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "series": self.series,
            "trials": self.trials,
            "not_converged": self.not_converged,
            **self.kpi.to_dict(),
        }


@attrs.frozen
class MetricAnalysis:
    """Per-series KPIs, the variability score across series, and why to distrust them.

    ``variability`` is None when no variability score was asked for. ``descriptive_only``
    is True when the run-level independence verdict failed (``independence``, set by
    :func:`with_run_verdict`), a bound lacked samples, trials did not converge, or (on request)
    a per-series test failed; ``reasons`` says which, in words, the run-level one last.
    """

    series: tuple[SeriesKPI, ...]
    variability: Variability | None
    descriptive_only: bool
    reasons: tuple[str, ...]
    independence: RunIndependence | None = None
    per_series_decides: bool = False
    """True when the per-series tests made it descriptive only (``per_series_independence``)."""

    @property
    def configuration_reasons(self) -> tuple[str, ...]:
        """The reasons that belong to this configuration (not the run-level verdict)."""
        run = self.independence.reason() if self.independence is not None else ""
        return tuple(r for r in self.reasons if not run or r != run)

    def per_series_flags(self) -> tuple[int, int]:
        """(series whose TriScale per-series test failed, series tested)."""
        tested = [s for s in self.series if s.kpi.independence.n >= 4]
        return sum(not s.kpi.independent for s in tested), len(tested)

    def to_dict(self) -> dict[str, Any]:
        flagged, tested = self.per_series_flags()
        return {
            "series": [s.to_dict() for s in self.series],
            "variability": None if self.variability is None else self.variability.to_dict(),
            "descriptive_only": self.descriptive_only,
            "reasons": list(self.reasons),
            "independence": None if self.independence is None else self.independence.to_dict(),
            "per_series_independence": {
                "flagged": flagged,
                "tested": tested,
                "note": per_series_note(flagged, tested, RUN_ALPHA),
            },
        }


def with_run_verdict(analysis: MetricAnalysis, verdict: RunIndependence) -> MetricAnalysis:
    """``analysis`` with the run-level verdict of its metric; descriptive only when it failed."""
    reasons = analysis.reasons if verdict.passed else (*analysis.reasons, verdict.reason())
    return attrs.evolve(
        analysis, independence=verdict, reasons=reasons, descriptive_only=bool(reasons)
    )


def analyze_metric(
    values: np.ndarray,
    series: np.ndarray | None,
    kpi_percentile: float,
    kpi_confidence: float,
    bound: str,
    var_percentile: float | None,
    var_confidence: float | None,
    exclude: int = 0,
    kpi_method: Callable[..., KPI] = kpi,
    variability_method: Callable[..., Variability] = variability,
    options: Mapping[str, Any] | None = None,
    per_series_independence: bool = False,
) -> MetricAnalysis:
    """TriScale's KPI and variability analysis of one configuration's metric values.

    ``values`` are per-trial metric values in trial order (nan for trials whose convergence
    test failed), ``series`` the series index of each (None: one series). ``exclude`` is
    the number of extreme trials each KPI must not rest on (see ``kpi``). ``kpi_method`` and
    ``variability_method`` are the registry's implementations (docs/plugins.md: a kpi method
    takes ``(values, percentile, confidence, bound, exclude, **options)`` and returns a
    :class:`~benchlang.stats.kpi.KPI`); Thompson's and TriScale's by default, the built-in
    KPI computed for every series at once (``kpis``).

    TriScale's per-series independence tests (§4.5) are computed for every series and for the
    KPIs across series, but make the result descriptive only only with
    ``per_series_independence``: run alone they are a family of one test per series at 5% each
    (15 series: 0.75 false alarms expected per run); the run-level verdict
    (:mod:`benchlang.stats.run_independence`, :func:`with_run_verdict`) replaces them.
    """
    v = np.asarray(values, dtype=float).ravel()
    s = np.zeros(v.size, dtype=np.int64) if series is None else np.asarray(series).ravel()
    if s.size != v.size:
        raise ValueError(f"values ({v.size}) and series ({s.size}) differ in length")
    reasons: list[str] = []
    order = np.argsort(s, kind="stable")
    labels, first = np.unique(s[order], return_index=True)
    groups = np.split(v[order], first[1:]) if labels.size else []
    if kpi_method is kpi and not options:
        series_kpis = kpis(groups, kpi_percentile, kpi_confidence, bound, exclude)
    else:
        series_kpis = [
            kpi_method(sv, kpi_percentile, kpi_confidence, bound, exclude, **(options or {}))
            for sv in groups
        ]
    per_series = []
    for label, sv, k in zip(labels, groups, series_kpis, strict=True):
        bad = int(sv.size - k.n)
        per_series.append(SeriesKPI(int(label), k, int(sv.size), bad))
        if bad:
            reasons.append(f"series {label}: {bad} of {sv.size} trials did not converge")
        if not k.enough:
            why = k.refusal or f"{k.n} converged trials, the KPI needs {k.min_n}"
            reasons.append(f"series {label}: {why}")
        if per_series_independence and not k.independent:
            reasons.append(f"series {label}: metric values {k.independence.reason}")
    var = None
    if var_percentile is not None and var_confidence is not None:
        var = variability_method([p.kpi.value for p in per_series], var_percentile, var_confidence)
        if not var.enough:
            reasons.append(f"variability: {var.n} series with a KPI, the score needs {var.min_n}")
        elif per_series_independence and not var.independent:
            reasons.append(f"variability: KPIs {var.independence.reason}")
    return MetricAnalysis(
        tuple(per_series), var, bool(reasons), tuple(reasons), None, per_series_independence
    )
