"""The HTML report of a stored plan (``benchlang report``, ``run --report``): gather what
``analyze``, ``order`` and ``profile`` compute, then render one self-contained page."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from benchlang import model
from benchlang.errors import UserError
from benchlang.report.data import ExperimentData, load_data
from benchlang.report.html.inputs import FailedTrial, ProfileView, ReportInputs
from benchlang.run.store import Store


def _raw_series(
    store: Store, data: ExperimentData
) -> dict[tuple[str, int], tuple[int, np.ndarray]]:
    """The first successful trial's raw series per (series metric, configuration)."""
    out: dict[tuple[str, int], tuple[int, np.ndarray]] = {}
    t = data.table
    for name, mv in data.metrics.items():
        if mv.converged is None and not _is_series(data.experiment, mv.metric):
            continue
        wanted: dict[int, int] = {}
        for index, *_ in data.configurations():
            ok = np.flatnonzero((t.configuration == index) & t.ok)
            if ok.size:
                wanted[int(t.trial[ok[0]])] = index
        stored = store.series_values(data.plan.plan_hash, mv.metric.measure)
        for trial, index in wanted.items():
            if trial in stored:
                out[(name, index)] = (trial, stored[trial])
    return out


def _is_series(experiment: model.Experiment, metric: model.Metric) -> bool:
    return any(
        (b.measure(metric.measure) or model.Measure("")).series for b in experiment.benchmarks
    )


def _failed(store: Store, plan_hash: str) -> list[FailedTrial]:
    return [
        FailedTrial(
            int(trial),
            str(label),
            reason,
            exit_status,
            (out or b"").decode(errors="replace"),
            (err or b"").decode(errors="replace"),
        )
        for trial, label, reason, exit_status, out, err in store.failed_trials(plan_hash)
    ]


def _profiles(experiment: model.Experiment) -> list[ProfileView]:
    from benchlang.app.profile import profile_spec_item

    out = []
    for item in experiment.profiles:
        view = ProfileView(item["name"], str(item["path"]), float(item["period"]))
        try:
            view = ProfileView(view.name, view.path, view.seconds, profile_spec_item(item).result)
        except UserError as err:
            view = ProfileView(view.name, view.path, view.seconds, problem=err.message)
        out.append(view)
    return out


def report_inputs(
    store_path: str | Path,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    note: str | None = None,
    *,
    with_headline: bool = True,
) -> ReportInputs:
    """Everything the report shows, from the same functions ``analyze`` and ``order`` use,
    each computed once; ``with_headline=False`` skips the headline's bootstrap (the methods
    paragraph does not cite it)."""
    from benchlang.app.analysis import kpis_and_headline, order_of
    from benchlang.report.analysis import analyze
    from benchlang.report.compare_family import compare_all
    from benchlang.report.equal_hosts import host_agreement
    from benchlang.report.warmup import warmup_advice

    with Store(store_path) as store:
        data = load_data(store, plan_hash, experiment=experiment, every_measure=False)
        exp = data.experiment
        every_phase = (
            load_data(
                store, data.plan.plan_hash, all_phases=True, experiment=exp, every_measure=False
            )
            if exp.design.layout is not None
            else None
        )
        stops = store.stops(data.plan.plan_hash)
        failed = _failed(store, data.plan.plan_hash)
        raw = _raw_series(store, data)
    if len(data.table) == 0:
        raise UserError(f"plan {data.plan.plan_hash[:19]} has no trials in {store_path}")
    order = None
    if exp.design.layout is None and exp.metrics:
        alpha = (exp.order_dependence or {}).get("alpha", 0.05)
        order = order_of(data, None, alpha)
    if with_headline:
        kpis, headlines = kpis_and_headline(data) if exp.kpis else ([], [])
    else:
        kpis, headlines = analyze(data) if exp.kpis else [], []
    return ReportInputs(
        data=data,
        store=str(store_path),
        kpis=kpis,
        headline=headlines,
        comparisons=compare_all(data),
        warmup=warmup_advice(every_phase) if every_phase is not None else [],
        order=order,
        profiles=_profiles(exp),
        stops=list(stops),
        failed=failed,
        raw=raw,
        note=note,
        equal_hosts=host_agreement(data),
    )


def write_report(
    store_path: str | Path,
    out: str | Path,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    note: str | None = None,
) -> tuple[int, float]:
    """Write the report to ``out``; its size in bytes and the seconds it took."""
    from benchlang.report.html import render_report

    start = time.perf_counter()
    page = render_report(report_inputs(store_path, plan_hash, experiment, note))
    path = Path(out)
    try:
        path.write_text(page, encoding="utf-8")
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror}") from None
    return len(page.encode("utf-8")), time.perf_counter() - start


def methods_of(
    store_path: str | Path,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
) -> str:
    """The methods paragraph for a paper and its BibTeX entries (``record --format methods``)."""
    from benchlang.report.methods import methods_text

    return methods_text(report_inputs(store_path, plan_hash, experiment, with_headline=False))
