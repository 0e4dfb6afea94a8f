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
from benchlang.run.store.records import concatenate
from benchlang.stats.campaign import SessionShare, session_share


@attrs.frozen
class SessionShareRow:
    """One configuration's between-session share of one metric."""

    metric: str
    configuration: str
    share: SessionShare

    def to_dict(self) -> dict:
        return {"metric": self.metric, "configuration": self.configuration, **self.share.to_dict()}


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
    if len(paths) == 1:
        return load_store(
            paths[0],
            plan_hash,
            experiment=experiment,
            every_measure=every_measure,
            all_phases=all_phases,
        )
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
    (empty for a single session)."""
    table = data.table
    if table.session is None or np.unique(table.session).size < 2:
        return []
    rows = []
    for name in dict.fromkeys(k.metric for k in data.experiment.kpis):
        mv = data.metrics[name]
        for index, label, _, _ in data.configurations():
            mine = table.ok & (table.configuration == index)
            rows.append(
                SessionShareRow(name, label, session_share(mv.values[mine], table.session[mine]))
            )
    return rows
