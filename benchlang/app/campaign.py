"""A campaign: several stores of one experiment (days, nodes, CI jobs) read as sessions of one
data set, so that KPIs and comparisons use sessions as their top clusters and the share of the
spread between sessions is shown (``stats.campaign``; docs/statistics.md, "Campaigns").

Every store must hold the same experiment with the same configurations: a store missing one,
or of another experiment, is refused (fail closed), as ``diff`` refuses it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from benchlang import model
from benchlang.app.stores import load_store
from benchlang.errors import UserError
from benchlang.report.data import ExperimentData, MetricValues
from benchlang.report.sessions_text import SessionShareRow, share_rows
from benchlang.report.stamps import Stamps
from benchlang.run.store.records import concatenate


def load_campaign(
    paths: Sequence[str | Path],
    plan_hash: str | None = None,
    *,
    experiment: model.Experiment | None = None,
    every_measure: bool = True,
    all_phases: bool = False,
) -> ExperimentData:
    """The trials of every store as one data set, each store a session (one store: as
    ``load_store``). Configurations are matched by label; the first store's spec analyses all.
    ``plan_hash`` names one plan, which every store must hold (one spec and seed make one plan);
    None: each store's latest."""
    if plan_hash is not None and len(paths) > 1:
        _hold_plan(paths, plan_hash)
    sessions = [
        load_store(
            path,
            plan_hash,
            experiment=experiment,
            every_measure=every_measure,
            all_phases=all_phases,
        )
        for path in paths
    ]
    return merge_sessions(paths, sessions)


def _hold_plan(paths: Sequence[str | Path], plan_hash: str) -> None:
    """Refuse (``UserError``) a campaign whose stores do not all hold ``plan_hash``."""
    from benchlang.run.store import Store

    for path in paths:
        with Store(path) as store:
            plans = store.plans()
            try:
                store.plan(plan_hash)
            except UserError:
                if not plans:
                    raise
                raise UserError(
                    f"{path} holds no plan {plan_hash}: with several stores, --plan names a "
                    "plan every store holds",
                    "omit --plan to read each store's latest plan (plans in "
                    f"{path}: {', '.join(p.plan_hash[:19] for p in plans)})",
                ) from None


def merge_sessions(
    paths: Sequence[str | Path], sessions: Sequence[ExperimentData]
) -> ExperimentData:
    """The sessions' data (``load_store`` of each of ``paths``) as one data set; other
    experiments or configurations are refused (``UserError``)."""
    if len(sessions) == 1:
        return sessions[0]
    first = sessions[0]
    labels = {label: index for index, label, _, _ in first.configurations()}
    for path, data in zip(paths, sessions, strict=True):
        if data.experiment.name != first.experiment.name:
            raise UserError(
                f"{path} holds experiment {data.experiment.name!r}, {paths[0]} "
                f"{first.experiment.name!r}: a campaign is several sessions of one experiment",
                "give stores of one spec",
            )
        mine = {label for _, label, _, _ in data.configurations()}
        if mine != set(labels):
            missing = sorted(set(labels) - mine) or sorted(mine - set(labels))
            raise UserError(
                f"{path} and {paths[0]} differ in their configurations ({', '.join(missing)})",
                "a campaign compares the same configurations in every session",
            )
    tables = [
        attrs.evolve(
            d.table,
            configuration=np.array([labels[str(x)] for x in d.table.label.tolist()], np.int64),
        )
        for d in sessions
    ]
    table = concatenate(tables)
    offsets = np.cumsum([0] + [int(t.trial.max(initial=-1)) + 1 for t in tables[:-1]])
    stamps = _stamps(sessions, offsets)
    metrics = {
        name: MetricValues(
            mv.metric,
            np.concatenate([d.metrics[name].values for d in sessions]),
            None
            if any(d.metrics[name].converged is None for d in sessions)
            else np.concatenate([d.metrics[name].converged for d in sessions]),
        )
        for name, mv in first.metrics.items()
    }
    return attrs.evolve(
        first,
        table=table,
        metrics=metrics,
        left_out=sum(d.left_out for d in sessions),
        hosts={k: v for d in sessions for k, v in d.hosts.items()},
        failures={
            int(trial) + int(offset): detail
            for d, offset in zip(sessions, offsets, strict=True)
            for trial, detail in d.failures.items()
        },
        leases=tuple(line for d in sessions for line in d.leases),
        forced=tuple(line for d in sessions for line in d.forced),
        stamps=stamps,
        stores=tuple(str(p) for p in paths),
    )


def _stamps(sessions: Sequence[ExperimentData], offsets: np.ndarray) -> Stamps | None:
    """Every session's stamps of its own trials, numbered as ``concatenate`` numbers them
    (None when a session has none: loaded without every measure)."""
    parts = []
    for d, offset in zip(sessions, offsets, strict=True):
        if d.stamps is None:
            return None
        parts.append((d.table.trial + offset, *d.stamps.of(d.table.trial)))
    trial, started, ended, code = (np.concatenate(c) for c in zip(*parts, strict=True))
    order = np.argsort(trial, kind="stable")
    return Stamps(trial[order], started[order], ended[order], code[order])


def session_shares(data: ExperimentData) -> list[SessionShareRow]:
    """Per KPI metric and configuration, the between-session share of its successful trials
    (empty for a single session; ``report.sessions_text.share_rows``)."""
    return share_rows(data, (k.metric for k in data.experiment.kpis))


def campaign_results(
    paths: Sequence[str | Path], plan_hash: str | None = None
) -> tuple[ExperimentData, list]:
    """``results`` of several stores: the campaign's data and, when the spec has KPIs, the
    headline whose ranking uses sessions as its top clusters (``report.headline``)."""
    from benchlang.report.analysis import analyze
    from benchlang.report.headline import headline

    data = load_campaign(paths, plan_hash)
    kpis = analyze(data) if data.experiment.kpis else []
    return data, (headline(data, kpis) if kpis else [])


def campaign_document(paths: Sequence[str | Path], data: ExperimentData, headlines: list) -> dict:
    """The ``results --json`` document of a campaign: ``report.exports``' document with each
    trial's and each per-session summary's session and store, and a ``campaign`` block (the
    stores in session order, the spread the answers carry, each configuration's share)."""
    from benchlang.report.exports import results_document
    from benchlang.report.sessions_text import SPREAD
    from benchlang.report.trial_columns import own_numbers

    stores = [str(p) for p in paths]
    doc = results_document(data, None, headlines)
    table = data.table
    mine = own_numbers(table.trial, table.sessions).tolist()
    own = dict(
        zip(table.trial.tolist(), zip(table.sessions.tolist(), mine, strict=True), strict=True)
    )
    for row in doc["configurations"]:
        for failed in row["failed_trials"]:
            session, trial = own[failed["trial"]]
            failed.update(session=session + 1, trial=trial)
        for metric in row["metrics"].values():
            for entry in metric.get("sessions", ()):
                entry["store"] = stores[entry["session"] - 1]
    doc["campaign"] = {
        "sessions": len(stores),
        "stores": stores,
        "spread": SPREAD,
        "between_sessions": [r.to_dict() for r in share_rows(data, data.metrics)],
    }
    return doc
