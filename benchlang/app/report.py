"""The HTML report of a stored plan (``benchlang report``, ``run --report``): gather what
``analyze``, ``order`` and ``profile`` compute, then render one self-contained page."""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from benchlang import model
from benchlang.errors import UserError
from benchlang.report.atomic import write_atomic
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
    store_path: str | Path | Sequence[str | Path],
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    note: str | None = None,
    *,
    with_headline: bool = True,
) -> ReportInputs:
    """Everything the report shows, from the same functions ``analyze`` and ``order`` use,
    each computed once and only when first read (``ReportInputs``: a figure export reads
    what its figure draws); ``with_headline=False`` skips the headline's bootstrap (the
    methods paragraph does not cite it). Several stores are the sessions of a campaign
    (``app.campaign``): sessions are the top clusters and their share is a part."""
    from benchlang.app.campaign import merge_sessions, session_shares

    paths = [store_path] if isinstance(store_path, (str, Path)) else list(store_path)

    plans: list[str] = []

    def sessions_of(**how) -> ExperimentData:
        loaded = []
        for path in paths:
            with Store(path) as store:
                loaded.append(load_data(store, plan_hash, experiment=experiment, **how))
        plans[:] = [d.plan.plan_hash for d in loaded]
        return merge_sessions(paths, loaded) if len(loaded) > 1 else loaded[0]

    data = sessions_of(every_measure=False)
    if len(data.table) == 0:
        raise UserError(f"plan {data.plan.plan_hash[:19]} has no trials in {paths[0]}")
    exp = data.experiment
    plan = data.plan.plan_hash

    def stored(read):
        def part():
            with Store(paths[0]) as store:
                return read(store)

        return part

    def each(read):
        """``read(store, plan)`` over every session (one store: as ``stored``)."""
        if len(paths) == 1:
            return stored(lambda store: read(store, plan))

        def part():
            out = []
            for i, (path, hash_) in enumerate(zip(paths, plans, strict=True)):
                with Store(path) as store:
                    out += [_in_session(x, i) for x in read(store, hash_)]
            return out

        return part

    @functools.cache
    def kpis_headline() -> tuple[list, list]:
        from benchlang.app.analysis import kpis_and_headline
        from benchlang.report.analysis import analyze

        if not exp.kpis:
            return [], []
        return kpis_and_headline(data) if with_headline else (analyze(data), [])

    def order():
        from benchlang.app.analysis import order_of

        if exp.design.layout is not None or not exp.metrics:
            return None
        return order_of(data, None, (exp.order_dependence or {}).get("alpha", 0.05))

    def comparisons():
        from benchlang.app.comparisons import compare_all

        return compare_all(data)

    def warmup():
        from benchlang.report.warmup import warmup_advice

        if exp.design.layout is None:
            return []
        return warmup_advice(sessions_of(all_phases=True, every_measure=False))

    def equal_hosts():
        from benchlang.report.equal_hosts import host_agreement

        return host_agreement(data)

    return ReportInputs(
        data,
        ", ".join(str(p) for p in paths),
        note,
        kpis=lambda: kpis_headline()[0],
        headline=lambda: kpis_headline()[1],
        comparisons=comparisons,
        warmup=warmup,
        order=order,
        profiles=lambda: _profiles(exp),
        stops=each(lambda store, plan: list(store.stops(plan))),
        failed=each(_failed),
        raw=stored(lambda store: _raw_series(store, data)),
        equal_hosts=equal_hosts,
        sessions=lambda: session_shares(data),
        stores=tuple(str(p) for p in paths) if len(paths) > 1 else (),
        plans=tuple(plans) if len(paths) > 1 else (),
    )


def _in_session(item, session: int):
    """A failed trial or a stop of a campaign's session, its label naming the session."""
    if isinstance(item, FailedTrial):
        return attrs.evolve(item, label=f"{item.label} (session {session + 1})")
    return item


def write_report(
    store_path: str | Path | Sequence[str | Path],
    out: str | Path,
    plan_hash: str | None = None,
    experiment: model.Experiment | None = None,
    note: str | None = None,
    *,
    figures: bool = True,
) -> tuple[int, float]:
    """Write the report to ``out`` (without the papers' figures unless ``figures``); its size
    in bytes and the seconds it took."""
    from benchlang.report.html import render_report

    start = time.perf_counter()
    inputs = report_inputs(store_path, plan_hash, experiment, note)
    page = render_report(inputs, figures=figures)
    path = Path(out)
    try:
        write_atomic(path, page)
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
