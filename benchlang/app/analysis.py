"""Analysing results: the spec's KPIs, comparisons and warm-up advice over a store, the same
KPIs over a CSV from elsewhere, the order-dependence report and the reproducibility record."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from benchlang.app import blas_threads  # before numpy: see its docstring

# isort: split
import attrs
import numpy as np

from benchlang import model
from benchlang.app.stores import load_store
from benchlang.errors import UserError

if TYPE_CHECKING:
    from benchlang.app.campaign import SessionShareRow
    from benchlang.report.analysis import ConfigurationAnalysis
    from benchlang.report.data import ExperimentData
    from benchlang.report.equal_hosts import HostAgreement
    from benchlang.report.headline import MetricHeadline
    from benchlang.report.population import PopulationAnalysis
    from benchlang.report.record import Record
    from benchlang.report.warmup import WarmupAdvice
    from benchlang.stats.comparison import ComparisonResult
    from benchlang.stats.order_analysis import OrderReport

blas_threads.started()


@attrs.frozen
class StoreAnalysis:
    """Everything ``benchlang analyze`` shows for one plan of a store."""

    data: ExperimentData
    kpis: list[ConfigurationAnalysis]
    comparisons: list[ComparisonResult]
    warmup: list[WarmupAdvice]
    equal_hosts: list[HostAgreement] = attrs.field(factory=list)
    """With ``design { redundancy N }``: do the equal hosts agree (DataMill §4.2)?"""
    headlines: list[MetricHeadline] = attrs.field(factory=list)
    """What ``run`` and ``analyze`` end with (``report.headline``)."""
    sessions: list[SessionShareRow] = attrs.field(factory=list)
    """With several stores (a campaign): each configuration's between-session share."""
    population: PopulationAnalysis | None = None
    """With a population factor: the KPIs generalised over its inputs (TriScale §5.3)."""


def analyze_store(
    store_path: str | Path | Sequence[str | Path],
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    per_series_independence: bool = False,
) -> StoreAnalysis:
    """KPIs, the headline, comparisons and (for A/B layouts) warm-up advice of a stored
    plan; ``per_series_independence`` lets TriScale's per-series independence tests decide
    too (``report.analysis.analyze``). Several stores are the sessions of a campaign
    (``app.campaign``): sessions are then the top clusters and their share is shown."""
    from benchlang.app.campaign import load_campaign, session_shares

    paths = [store_path] if isinstance(store_path, (str, Path)) else list(store_path)
    data = load_campaign(paths, plan_hash, experiment=experiment, every_measure=False)
    experiment = data.experiment
    every_phase = (
        load_campaign(paths, plan_hash, all_phases=True, experiment=experiment, every_measure=False)
        if experiment.design.layout
        else None
    )
    if not (
        experiment.kpis
        or experiment.order_dependence
        or experiment.comparisons
        or experiment.profiles
        or experiment.equal_hosts
        or every_phase
    ):
        raise UserError(
            "the spec declares no kpi and no order_dependence analysis",
            "add e.g.: kpi time { percentile 50 confidence 95% }",
        )
    kpis, headlines = kpis_and_headline(data, per_series_independence)
    if experiment.kpis and not kpis:
        raise UserError(
            no_values(data),
            "benchlang results STORE --format json lists every trial with its status and failure reason",
        )
    comparisons, warmup, equal_hosts = [], [], []
    if experiment.comparisons:  # each report module imported only when the spec needs it
        from benchlang.app.comparisons import compare_all

        comparisons = compare_all(data)
    if every_phase is not None:
        from benchlang.report.warmup import warmup_advice

        warmup = warmup_advice(every_phase)
    if experiment.equal_hosts is not None:
        from benchlang.report.equal_hosts import host_agreement

        equal_hosts = host_agreement(data)
    population = None
    if experiment.population is not None and kpis:
        from benchlang.report.population import population_analysis

        population = population_analysis(data, kpis)
    return StoreAnalysis(
        data, kpis, comparisons, warmup, equal_hosts, headlines, session_shares(data), population
    )


def kpis_and_headline(
    data: ExperimentData, per_series_independence: bool = False
) -> tuple[list, list]:
    """TriScale's KPIs of every configuration and the headline built on them."""
    from benchlang.report.analysis import analyze
    from benchlang.report.headline import headline

    kpis = analyze(data, per_series_independence)
    return kpis, headline(data, kpis) if kpis else []


def population_of(data: ExperimentData) -> PopulationAnalysis | None:
    """The KPIs generalised over the spec's population factor (TriScale §5.3), or None."""
    if data.experiment.population is None or not data.experiment.kpis:
        return None
    from benchlang.report.analysis import analyze
    from benchlang.report.population import population_analysis

    kpis = analyze(data)
    return population_analysis(data, kpis) if kpis else None


def no_values(data: ExperimentData) -> str:
    """Why a plan has nothing to analyse: no trial has a value of any KPI's metric."""
    table = data.table
    failed = int((~table.ok).sum())
    metrics = ", ".join(dict.fromkeys(k.metric for k in data.experiment.kpis))
    return (
        f"nothing to analyse: no trial of plan {data.plan.plan_hash[:19]} has a value of "
        f"{metrics} ({len(table)} trials, {failed} failed)"
    )


def analyze_csv(
    path: str | Path,
    kpi: dict[str, float],
    variability: dict[str, float] | None,
    series_column: str | None,
    better: str | Mapping[str, str],
) -> list[ConfigurationAnalysis]:
    """TriScale's KPI (and variability score) of every numeric column of a CSV file.

    ``kpi`` and ``variability`` hold ``percentile``, ``confidence`` (and ``exclude``);
    ``series_column`` names the column that assigns each row to a series (the series keep
    its values as names, in order of first appearance); ``better`` is one direction for every
    column, or a mapping column -> direction (columns it omits: lower is better).
    """
    from benchlang.csvrows import read_table  # only with --data
    from benchlang.report.analysis import analyze_values, joint_verdict
    from benchlang.stats._groups import group_codes

    table = read_table(path, header=True)
    series = None
    names: tuple[str, ...] = ()
    if series_column is not None:
        index = table.index(series_column)
        labels = [row[index] if index < len(row) else "" for row in table.rows]
        distinct, series = group_codes(np.array(labels, dtype=str))
        names = tuple(str(x) for x in distinct)
    columns = [c for c in table.numeric_names() if c != series_column]
    if isinstance(better, Mapping):
        unknown = sorted(set(better) - set(columns))
        if unknown:
            raise UserError(
                f"--better names {', '.join(unknown)}, not a numeric column of {path}",
                f"columns: {', '.join(columns)}",
            )
    results = []
    for column in columns:
        side = better.get(column, "lower") if isinstance(better, Mapping) else better
        bound = "upper" if side == "lower" else "lower"
        k = model.Kpi(
            column, kpi["percentile"], kpi["confidence"], bound, int(kpi.get("exclude", 0))
        )
        v = (
            model.Variability(column, variability["percentile"], variability["confidence"])
            if variability
            else None
        )
        results.append(analyze_values(table.numbers(column), series, column, k, v, names))
    if not results:
        raise UserError(f"{path} has no numeric column")
    return joint_verdict(results)


def order_of(data: ExperimentData, metric: str | None, alpha: float) -> OrderReport:
    """Order dependence (OrderSage), position and carry-over effects of a stored plan."""
    from benchlang.app.order import order_report

    if not 0.0 < alpha < 1.0:
        raise UserError("--alpha must lie strictly between 0 and 1")
    return order_report(data, metric, alpha)


def order_of_store(
    store_path: str | Path, plan_hash: str | None, metric: str | None, alpha: float
) -> OrderReport:
    """``order_of`` a store's plan; A/B layouts have no fixed- and random-order rounds."""
    if not 0.0 < alpha < 1.0:
        raise UserError("--alpha must lie strictly between 0 and 1")
    data = load_store(store_path, plan_hash, every_measure=False)
    if data.experiment.design.layout is not None:
        raise UserError(
            "an A/B layout has no fixed- and random-order rounds to compare",
            "order effects within its host batches show in 'benchlang analyze' (warm-up and cool-down advice)",
        )
    return order_of(data, metric, alpha)


def record_of(
    store_path: str | Path,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
) -> Record:
    """The 12-parameter reproducibility record (TriScale §4.4) of a stored plan."""
    from benchlang.report.analysis import analyze, build_record

    data = load_store(store_path, plan_hash, experiment=experiment, every_measure=False)
    if not data.experiment.kpis:
        raise UserError("the record needs at least one kpi in the spec")
    kpis = analyze(data)
    if not kpis:
        raise UserError(no_values(data))
    return build_record(data, kpis)
