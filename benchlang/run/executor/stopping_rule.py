"""The spec's stopping rule inside a run (Mittal et al., PMBS 2023; docs/stopping.md): each
measured trial feeds its stream, a decision is committed with the trial that made it, and a
stopped configuration's remaining trials of that series are skipped (and restored on resume).
It also says which trials of a round remain to run: those neither stored nor skipped."""

from __future__ import annotations

from collections.abc import Iterable

from benchlang.run.executor.state import RunState
from benchlang.run.stopping import decision_from_row
from benchlang.run.store import StopRecord, TrialRecord
from benchlang.run.trial_metric import metric_values


class StopRule:
    """The stopping rule's bookkeeping (a part of ``Executor`` over its ``RunState``)."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def skipped(self, t: int) -> bool:
        """A trial the stopping rule made unnecessary (its configuration stopped in its series)."""
        plan = self.state.plan
        return self.state.stopping.is_stopped(
            int(plan.round_series[plan.trial_round[t]]), int(plan.trial_configuration[t])
        )

    def unfinished(self, r: int) -> list[int]:
        """Round ``r``'s trials still to run: not in the store, not made unnecessary."""
        state = self.state
        bounds = state.plan.round_bounds
        todo = [t for t in range(int(bounds[r]), int(bounds[r + 1])) if t not in state.finished]
        if state.stopping.active:
            todo = [t for t in todo if not self.skipped(t)]
        return todo

    def pending(self, rounds: Iterable[int]) -> list[int]:
        """The rounds of ``rounds`` with a trial still to run, in their order."""
        return [r for r in rounds if self.unfinished(r)]

    def count_not_needed(self) -> int:
        state = self.state
        if not state.stopping.active:
            return 0
        return sum(
            1 for t in range(state.plan.n_trials) if t not in state.finished and self.skipped(t)
        )

    def restore(self) -> None:
        """On resume: stored decisions, and each stream's values in trial order."""
        state = self.state
        decisions = {
            (s, c): decision_from_row(a, r, k, why)
            for s, c, _n, a, r, k, why in state.store.stops(state.plan_hash)
        }
        table = state.store.trial_table(state.plan_hash)
        table = table.select(table.measured)
        if len(table) == 0 and not decisions:
            return
        metric = state.stopping.metric
        assert metric is not None  # restore runs only when the rule is active
        values = metric_values(state.experiment, state.store, state.plan_hash, table)[
            metric.name
        ].values
        keys = {
            (int(s), int(c)) for s, c in zip(table.series, table.configuration, strict=True)
        } | set(decisions)
        for key in keys:
            mask = (table.series == key[0]) & (table.configuration == key[1])
            state.stopping.restore(key[0], key[1], values[mask].tolist(), decisions.get(key))

    def decide(self, record: TrialRecord, series: int) -> StopRecord | None:
        """Feed the trial to the stopping rule; its decision, if it stops now, is committed in
        the same transaction as the trial."""
        stopping = self.state.stopping
        decision = stopping.observe(series, record.configuration, stopping.value_of(record))
        if decision is None:
            return None
        return StopRecord(
            series,
            record.configuration,
            len(stopping.samples[(series, record.configuration)]),
            decision.action,
            decision.rule,
            decision.detected_class,
            decision.reason,
        )

    def announce(self, record: TrialRecord, stop: StopRecord) -> None:
        state = self.state
        series, after = stop.series, stop.after_trials
        decision = state.stopping.stopped[(series, stop.configuration)]
        skipped = sum(
            1 for t in range(state.plan.n_trials) if t not in state.finished and self.skipped(t)
        )
        state.progress.total = len(state.finished) + sum(
            len(self.unfinished(q)) for q in range(state.plan.n_rounds)
        )
        warn = " (warning)" if decision.warned else ""
        state.progress.note(
            f"{record.label} series {series}: stopped after {after} trials{warn}: {decision.rule}: {decision.reason}; {skipped} trials not needed"
        )
