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
    ``load_store``). Configurations are matched by label; the first store's spec analyses all."""
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
    )


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

    stores = [str(p) for p in paths]
    doc = results_document(data, None, headlines)
    for row, session in zip(doc["trials"], data.table.sessions.tolist(), strict=True):
        row["session"] = session + 1
    for row in doc["configurations"]:
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
