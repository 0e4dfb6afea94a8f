"""The spec's stopping rule inside a run (Mittal et al., PMBS 2023; docs/stopping.md): each
measured trial feeds its stream, a decision is committed with the trial that made it, and a
stopped configuration's remaining trials of that series are skipped (and restored on resume)."""

from __future__ import annotations

from benchlang.run.stopping import decision_from_row
from benchlang.run.store import StopRecord, TrialRecord
from benchlang.run.trial_metric import metric_values


class StoppingRule:
    """The stopping rule's bookkeeping (a mixin of ``Executor``)."""

    def _skipped(self, t: int) -> bool:
        """A trial the stopping rule made unnecessary (its configuration stopped in its series)."""
        plan = self.plan
        return self.stopping.is_stopped(
            int(plan.round_series[plan.trial_round[t]]), int(plan.trial_configuration[t])
        )

    def _count_not_needed(self) -> int:
        if not self.stopping.active:
            return 0
        return sum(
            1 for t in range(self.plan.n_trials) if t not in self.finished and self._skipped(t)
        )

    def _restore_stopping(self) -> None:
        """On resume: stored decisions, and each stream's values in trial order."""
        decisions = {
            (s, c): decision_from_row(a, r, k, why)
            for s, c, _n, a, r, k, why in self.store.stops(self.plan_hash)
        }
        table = self.store.trial_table(self.plan_hash)
        table = table.select(table.measured)
        if len(table) == 0 and not decisions:
            return
        values = metric_values(self.experiment, self.store, self.plan_hash, table)[
            self.stopping.metric.name
        ].values
        keys = {
            (int(s), int(c)) for s, c in zip(table.series, table.configuration, strict=True)
        } | set(decisions)
        for key in keys:
            mask = (table.series == key[0]) & (table.configuration == key[1])
            self.stopping.restore(key[0], key[1], values[mask].tolist(), decisions.get(key))

    def _decide(self, record: TrialRecord, series: int) -> StopRecord | None:
        """Feed the trial to the stopping rule; its decision, if it stops now, is committed in
        the same transaction as the trial."""
        decision = self.stopping.observe(
            series, record.configuration, self.stopping.value_of(record)
        )
        if decision is None:
            return None
        return StopRecord(
            series,
            record.configuration,
            len(self.stopping.samples[(series, record.configuration)]),
            decision.action,
            decision.rule,
            decision.detected_class,
            decision.reason,
        )

    def _announce_stop(self, record: TrialRecord, stop: StopRecord) -> None:
        series, after = stop.series, stop.after_trials
        decision = self.stopping.stopped[(series, stop.configuration)]
        skipped = sum(
            1 for t in range(self.plan.n_trials) if t not in self.finished and self._skipped(t)
        )
        self.progress.total = len(self.finished) + sum(
            len(self._unfinished(q)) for q in range(self.plan.n_rounds)
        )
        warn = " (warning)" if decision.warned else ""
        self.progress.note(
            f"{record.label} series {series}: stopped after {after} trials{warn}: {decision.rule}: {decision.reason}; {skipped} trials not needed"
        )
