"""The default analysis (TriScale): per metric and configuration, the KPI of each series and
the variability score across series, with one run-level independence verdict
(``stats.run_independence``); plus the reproducibility record. Results whose assumptions
failed are marked descriptive only."""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from benchlang import __version__, model
from benchlang.report.data import ExperimentData
from benchlang.report.ranking_basis import with_drift_bases
from benchlang.report.table import metric_scale
from benchlang.stats.run_independence import (
    IndependenceTest,
    RunIndependence,
    kpi_trend_test,
    metric_tests,
    run_verdict,
)
from benchlang.stats.triscale import MetricAnalysis, analyze_metric, with_run_verdict

if TYPE_CHECKING:
    from benchlang.report.record import Record


@attrs.frozen
class ConfigurationAnalysis:
    configuration: str
    metric: str
    kpi: model.Kpi
    variability: model.Variability | None
    analysis: MetricAnalysis
    trials: int
    not_converged: int
    series_names: tuple[str, ...] = ()
    """The series' names by index (``analyze --data --series COLUMN``: the column's values)."""
    drift: Any = None
    """When the run-level check failed: whether the within-round contrasts may answer
    (``report.ranking_basis.DriftBasis``)."""

    def series_label(self, index: int) -> str | int:
        return self.series_names[index] if self.series_names else index

    def to_dict(self) -> dict[str, Any]:
        out = self.analysis.to_dict()
        if self.series_names:
            out["series"] = [
                {**s, "series_name": self.series_names[s["series"]]} for s in out["series"]
            ]
        return {
            "configuration": self.configuration,
            "metric": self.metric,
            "kpi_method": self.kpi.method,
            "kpi_settings": dict(self.kpi.options),
            "trials": self.trials,
            "not_converged": self.not_converged,
            **out,
            **({"drift": self.drift.to_dict()} if self.drift is not None else {}),
        }


def _through_registry(k: model.Kpi, seed: int = 0) -> dict[str, Any]:
    """The KPI's and the variability score's implementations from the statistics registry
    (``thompson`` and ``variability`` unless the spec names others), as analyze_metric takes
    them; a kpi method declaring ``seed`` draws from the experiment's unless the spec sets one."""
    from benchlang.stats.registry import statistics_methods

    methods = statistics_methods()
    options = dict(k.options)
    if methods[k.method].parameter("seed") is not None and options.get("seed") is None:
        options["seed"] = seed
    return {
        "kpi_method": methods[k.method].load(),
        "variability_method": methods["variability"].load(),
        "options": options,
    }


def analyze(
    data: ExperimentData, per_series_independence: bool = False
) -> list[ConfigurationAnalysis]:
    """Run the spec's KPIs and variability scores over every configuration, and judge
    independence once for the run (every metric's tests in one Holm family).

    ``per_series_independence`` also lets TriScale's per-series tests make a configuration
    descriptive only (§4.5 as the paper applies it; the family is then not controlled)."""
    exp = data.experiment
    table = data.table
    out = []
    tests: list[IndependenceTest] = []
    tested: set[str] = set()
    for k in exp.kpis:
        mv = data.metrics[k.metric]
        var = exp.variability(k.metric)
        methods = _through_registry(k, data.plan.seed)
        for index, label, _bench, _levels in data.configurations():
            mask = (table.configuration == index) & table.ok
            values = mv.values[mask]
            series = table.series[mask]
            measured = np.isfinite(values)
            if mv.converged is None and not measured.any():
                continue
            result = analyze_metric(
                values,
                series,
                k.percentile,
                k.confidence,
                k.bound,
                var.percentile if var else None,
                var.confidence if var else None,
                k.exclude,
                **methods,
                per_series_independence=per_series_independence,
            )
            not_converged = int((~mv.converged[mask]).sum()) if mv.converged is not None else 0
            out.append(
                ConfigurationAnalysis(
                    label, k.metric, k, var, result, int(mask.sum()), not_converged
                )
            )
        if k.metric not in tested and any(r.metric == k.metric for r in out):
            tested.add(k.metric)
            tests += _metric_family(data, k.metric, [r for r in out if r.metric == k.metric])
    return with_drift_bases(data, _with_verdict(out, run_verdict(tests)))


def _metric_family(
    data: ExperimentData, metric: str, results: list[ConfigurationAnalysis]
) -> list[IndependenceTest]:
    """The run-level tests of one metric: trend over the run and autocorrelation within
    series; with a ``span`` (series apart in time, TriScale §4.6) the trend is tested within
    series and the KPIs' trend across series joins the family."""
    table = data.table
    values = data.metrics[metric].values
    ok = slice(None) if table.ok.all() else table.ok  # NaN values are left out by the test
    span = bool(data.experiment.design.span)
    seed = data.plan.seed or 0
    tests = metric_tests(
        metric,
        values[ok],
        table.configuration[ok],
        table.series[ok],
        table.trial[ok],
        span=span,
        seed=seed,
    )
    if span and any(r.analysis.variability is not None for r in results):
        kpis = [
            (i, s.series, s.kpi.value) for i, r in enumerate(results) for s in r.analysis.series
        ]
        if kpis:
            c, s, v = (np.array(x) for x in zip(*kpis, strict=True))
            tests.append(kpi_trend_test(metric, v, c, s, seed=seed))
    return tests


def _with_verdict(
    results: list[ConfigurationAnalysis], verdict: RunIndependence
) -> list[ConfigurationAnalysis]:
    return [
        attrs.evolve(r, analysis=with_run_verdict(r.analysis, verdict.for_metric(r.metric)))
        for r in results
    ]


def run_independence_of(results: list[ConfigurationAnalysis]) -> RunIndependence | None:
    """The run-level verdict the results carry (every metric's tests), None without one."""
    seen: dict[tuple, IndependenceTest] = {}
    verdicts = [r.analysis.independence for r in results if r.analysis.independence is not None]
    for v in verdicts:
        for t in v.tests:
            seen.setdefault((t.metric, t.name), t)
    if not verdicts:
        return None
    return RunIndependence(verdicts[0].alpha, tuple(seen.values()), verdicts[0].family_size)


def analyze_values(
    values: np.ndarray,
    series: np.ndarray | None,
    name: str,
    kpi: model.Kpi,
    variability: model.Variability | None,
    series_names: tuple[str, ...] = (),
) -> ConfigurationAnalysis:
    """The same analysis for data from elsewhere (``benchlang analyze --data``): rows in time
    order, one configuration; its run-level tests in a family of their own until
    :func:`joint_verdict` puts several columns' in one. ``series_names`` name the series
    codes of ``series``."""
    result = analyze_metric(
        values,
        series,
        kpi.percentile,
        kpi.confidence,
        kpi.bound,
        variability.percentile if variability else None,
        variability.confidence if variability else None,
        kpi.exclude,
        **_through_registry(kpi),
    )
    v = np.asarray(values, dtype=float).ravel()
    s = np.zeros(v.size, np.int64) if series is None else np.asarray(series).ravel()
    tests = metric_tests(name, v, np.zeros(v.size, np.int64), s, np.arange(v.size))
    result = with_run_verdict(result, run_verdict(tests))
    return ConfigurationAnalysis(
        "data", name, kpi, variability, result, int(np.size(values)), 0, series_names
    )


def joint_verdict(results: list[ConfigurationAnalysis]) -> list[ConfigurationAnalysis]:
    """``results`` with one run-level family over all their tests (several metrics)."""
    bare = [
        attrs.evolve(t, level=float("nan"), rejected=False)
        for r in results
        if r.analysis.independence is not None
        for t in r.analysis.independence.tests
    ]
    verdict = run_verdict(bare)
    out = []
    for r in results:
        plain = attrs.evolve(
            r.analysis,
            independence=None,
            reasons=r.analysis.configuration_reasons,
            descriptive_only=bool(r.analysis.configuration_reasons),
        )
        out.append(attrs.evolve(r, analysis=with_run_verdict(plain, verdict.for_metric(r.metric))))
    return out


def finite_or_none(x: float | None) -> float | None:
    """A number for the record and JSON: NaN (not computed) becomes None."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def build_record(data: ExperimentData, results: list[ConfigurationAnalysis]) -> Record:
    from benchlang.report.record import MetricRecord, Record, two_sided_record
    from benchlang.stats.registry import kpi_method_text

    exp = data.experiment
    runtimes = {label: lv.get("runtime") for _, label, _, lv in data.configurations()}
    metrics = []
    for r in results:
        m = exp.metric(r.metric)
        assert m is not None  # analyze answers the declared metrics
        measure = (
            f"percentile {m.aggregate:g}" if isinstance(m.aggregate, float) else str(m.aggregate)
        )
        if m.measure != m.name:
            measure += f" of {m.measure}"
        kpi_values = [s.kpi.value for s in r.analysis.series]
        finite = [v for v in kpi_values if v is not None and math.isfinite(v)]
        var = r.analysis.variability
        several = len(kpi_values) > 1
        if several:
            kpi_value = float(np.median(finite)) if finite else None
            summary = f"median of {len(finite)} series"
        else:
            kpi_value = finite_or_none(kpi_values[0]) if kpi_values else None
            summary = None
        shown = var if var is not None and var.enough else None
        metrics.append(
            MetricRecord(
                name=r.metric,
                measure=measure,
                convergence_expected=m.convergence is not None,
                convergence_confidence=m.convergence.confidence if m.convergence else None,
                convergence_tolerance=m.convergence.tolerance if m.convergence else None,
                kpi_percentile=r.kpi.percentile,
                kpi_confidence=r.kpi.confidence,
                variability_percentile=r.variability.percentile if r.variability else None,
                variability_confidence=r.variability.confidence if r.variability else None,
                runs=exp.design.runs * exp.design.redundancy,
                series=exp.design.series,
                runtime=exp.design.runtime or runtimes.get(r.configuration),
                span=_planned_span(data),
                kpi_value=kpi_value,
                variability_score=finite_or_none(shown.score) if shown is not None else None,
                unit=m.unit,
                configuration=r.configuration,
                kpi_summary=summary,
                variability_lower=finite_or_none(shown.lower)
                if shown is not None and several
                else None,
                variability_upper=finite_or_none(shown.upper)
                if shown is not None and several
                else None,
                kpi_method=kpi_method_text(r.kpi),
                display_unit=metric_scale(data.metrics[r.metric].values[data.table.ok], m.unit)[0],
                **two_sided_record([s.kpi for s in r.analysis.series]),
                summary=_summary(data, r),
            )
        )
    from benchlang.report.compare_text import record_lines
    from benchlang.report.hosts import host_lines, host_warnings
    from benchlang.report.machine import record_json as machine_json
    from benchlang.report.machine import record_lines as machine_lines
    from benchlang.report.population_record import record_lines as population_lines
    from benchlang.stats.registry import methods_used

    return Record(
        exp.name,
        exp.spec_hash,
        data.plan.plan_hash,
        data.plan.seed,
        __version__,
        tuple(metrics),
        tuple(host_lines(data) + list(data.leases) + host_warnings(data)),
        methods_used(exp),
        record_lines(data),
        tuple(_record_independence(results)),
        tuple(machine_lines(exp, data.host_states, data.forced, data.hosts)),
        machine_json(exp, data.host_states, data.forced),
        tuple(population_lines(data)),
    )


def _summary(data: ExperimentData, r: ConfigurationAnalysis) -> dict:
    """The configuration's mean with its interval over cluster means (a campaign's sessions
    the top clusters: ``report.results.trial_units``), SD, IQR, CV."""
    from benchlang.report.results import trial_units
    from benchlang.stats.summaries import summarize

    mask = data.table.ok & (data.table.label == r.configuration)
    clusters, names, _ = trial_units(data)
    return summarize(data.metrics[r.metric].values[mask], clusters[mask], names).to_dict()


def _record_independence(results: list[ConfigurationAnalysis]) -> list[str]:
    """The record's lines: "time: independence (run-level, 2 tests, Holm at 5% (first step 2.5%)): ..."."""
    verdict = run_independence_of(results)
    if verdict is None:
        return []
    metrics = dict.fromkeys(t.metric for t in verdict.tests)
    return [f"{m}: {verdict.for_metric(m).summary()}" for m in metrics]


def _planned_span(data: ExperimentData) -> float | None:
    """The span the plan used: the spec's, or for ``span auto`` the one the plan resolved."""
    span = data.experiment.design.span
    if not isinstance(span, str):  # the only text is "auto"
        return span
    derived = json.loads(data.plan.plan_json).get("derived", [])
    return next((float(d["value"]) for d in derived if d["name"] == "span"), None)
