"""What reports are built from: a store's plan, its trials, and per-trial metric values.

The experiment is recompiled from the spec text kept in the store, so a store can be
analysed without the spec file at hand.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np

from benchlang import model
from benchlang.errors import UserError
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import Source, SpecError
from benchlang.report.stamps import Stamps, stored_stamps
from benchlang.run.store import Store, StoredPlan, TrialTable
from benchlang.run.trial_metric import MetricValues, metric_values


@attrs.frozen
class ExperimentData:
    """A stored plan's trials and metric values. ``left_out`` counts trials that ran but are not
    analysed (an A/B layout's warm-up and cool-down, Bakshy & Frachtenberg §2.2)."""

    experiment: model.Experiment
    plan: StoredPlan
    table: TrialTable
    metrics: dict[str, MetricValues]
    left_out: int = 0
    hosts: dict[str, dict[str, str]] = attrs.field(factory=dict)
    """Each host's recorded facts (CPU model, kernel, governor, ...), as the run stored them."""
    failures: dict[int, dict] = attrs.field(factory=dict)
    """Per failed trial: its exit status and last stderr line (``failure_details``)."""
    leases: tuple[str, ...] = ()
    """One line per lease that allocated machines (``StoredLease.summary``): the record's."""
    host_states: dict = attrs.field(factory=dict)
    """Each host's state probed at the run's start (``backends.host_state.HostState``), with
    a machine block (``report.machine``)."""
    forced: tuple[str, ...] = ()
    """What ``run --force`` went past, or left unchecked (``report.machine``)."""
    stamps: Stamps | None = None
    """Each trial's start, end and exit status for the trial exports (``report.stamps``)."""
    stores: tuple[str, ...] = ()
    """A campaign's stores as given, in session order (``app.campaign``); empty: one store."""

    def configurations(self) -> list[tuple[int, str, str, dict]]:
        """(index, label, benchmark, levels) of each configuration with trials, plan order."""
        drawn = self.experiment.drawn_levels
        _, first = np.unique(self.table.configuration, return_index=True)
        return [
            (
                int(self.table.configuration[i]),
                str(self.table.label[i]),
                str(self.table.benchmark[i]),
                {k: v for k, v in self.table.levels[i].items() if k not in drawn},
            )
            for i in first.tolist()
        ]


def experiment_of(plan: StoredPlan) -> model.Experiment:
    if plan.spec_text is None:
        raise UserError(f"plan {plan.plan_hash[:19]} has no spec text in the store")
    try:
        return compile_source(
            Source(plan.spec_path or "<stored spec>", plan.spec_text),
            Path(plan.spec_path or ".").parent,
        )
    except SpecError as err:
        raise UserError(
            f"the spec stored with plan {plan.plan_hash[:19]} no longer compiles:\n{err}"
        ) from None


def metric_measures(experiment: model.Experiment) -> list[str]:
    """The measures the experiment's metrics are computed from."""
    return list(
        dict.fromkeys(
            name
            for m in experiment.metrics
            for name in (m.expression.names() if m.expression is not None else (m.measure,))
        )
    )


def failure_details(store: Store, plan_hash: str) -> dict[int, dict]:
    """Per failed trial: exit status and the last non-empty stderr line, from the store."""
    out = {}
    for trial, _label, _reason, exit_status, _out, err in store.failed_trials(plan_hash):
        last = [x for x in (err or b"").decode(errors="replace").splitlines() if x.strip()]
        out[int(trial)] = {
            "exit_status": exit_status,
            "stderr_last_line": last[-1][:500] if last else None,
        }
    return out


def load_data(
    store: Store,
    plan_hash: str | None = None,
    *,
    all_phases: bool = False,
    experiment: model.Experiment | None = None,
    every_measure: bool = True,
) -> ExperimentData:
    """The measured trials of a plan (every trial with ``all_phases``), analysed with the
    stored spec, or with ``experiment`` (a spec whose changes do not shape the trials).
    Without ``every_measure`` only the measures the metrics read are loaded, and no stamps
    (an analysis needs neither; exports list them all)."""
    plan = store.plan(plan_hash)
    experiment = experiment or experiment_of(plan)
    table = store.trial_table(
        plan.plan_hash, None if every_measure else metric_measures(experiment)
    )
    left_out = 0
    if not all_phases and not table.measured.all():
        left_out = int((~table.measured).sum())
        table = table.select(table.measured)
    from benchlang.report.machine import stored_machine

    host_states, forced = stored_machine(store, plan.plan_hash)
    return ExperimentData(
        experiment,
        plan,
        table,
        metric_values(experiment, store, plan.plan_hash, table),
        left_out,
        store.host_facts(plan.plan_hash),
        failure_details(store, plan.plan_hash),
        tuple(filter(None, (s.summary() for s in store.leases(plan.plan_hash)))),
        host_states,
        forced,
        stored_stamps(store, plan.plan_hash) if every_measure else None,
    )


__all__ = [
    "ExperimentData",
    "MetricValues",
    "experiment_of",
    "failure_details",
    "load_data",
    "metric_measures",
    "metric_values",
]
