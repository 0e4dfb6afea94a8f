"""One round on one host: wait for its start (rounds spread over the span), reboot or reset
the host, run its trials in the plan's order, and record the round. The first round that runs
trials is judged: when all of them failed, the run fails fast (halting.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import attrs

from benchlang.backends.base import HostSession
from benchlang.plan.plan import ORDER_KINDS
from benchlang.run.executor.failures import HostStopped, describe_failure, stderr_line
from benchlang.run.executor.halting import Halting
from benchlang.run.executor.hooks import Hooks
from benchlang.run.executor.state import RunState
from benchlang.run.executor.stopping_rule import StopRule
from benchlang.run.executor.trial import TrialRunner
from benchlang.run.hidden import reboots
from benchlang.run.store import TrialRecord
from benchlang.run.store.writing import round_values

LOOP_TURN = 0.01
"""Seconds of trials after which one host's task gives the event loop a turn (at the next
trial's end): its trials may all end without suspending (``LocalSession._alone``), and what
else the loop serves (an asyncio cancellation, ``wait_for``, a caller's other tasks) must not
wait for the whole run (tests/test_runner_review.py)."""


@attrs.define(eq=False)
class RoundRunner:
    """A round's life on its host (a part of ``Executor`` over its ``RunState``)."""

    state: RunState
    hooks: Hooks
    trials: TrialRunner
    stop_rule: StopRule
    halting: Halting

    async def run(self, session: HostSession, r: int) -> None:
        state = self.state
        if state.first_round_failed is not None:
            return
        plan = state.plan
        series = int(plan.round_series[r])
        start = plan.series_start[series] if plan.round_start is None else plan.round_start[r]
        wait = state.run_started + float(start) - time.time()
        if wait > 0:
            state.progress.note(
                f"round {r} (series {series}) starts in {wait:.0f}s (spread over the span)"
            )
            await asyncio.sleep(wait)
        first, end = int(plan.round_bounds[r]), int(plan.round_bounds[r + 1])
        trials: Sequence[int] = range(first, end)
        order_kind = ORDER_KINDS[int(plan.round_order[r])]
        stopping = state.stopping.active
        if stopping:
            trials = [t for t in trials if t in state.finished or not self.stop_rule.skipped(t)]
            if not any(t not in state.finished for t in trials):
                return
            permutation = plan.trial_configuration[trials].tolist()
        else:
            permutation = plan.trial_configuration[first:end].tolist()
        started = time.time()

        def round_args(status: str) -> tuple[str, int, str, str, list[int], float, float, str]:
            """``round_values``'s arguments (``record_round`` takes them, not the row)."""
            host = session.host
            return state.plan_hash, r, host, order_kind, permutation, started, time.time(), status

        def round_row(status: str) -> tuple[object, ...]:
            return round_values(*round_args(status))

        def record_round(status: str) -> None:
            state.store.record_round(*round_args(status))

        if state.hidden and reboots(state.hidden, plan.plan_levels(first)):
            await self.hooks.reboot(session, r)
        reset_status = "none"
        if state.experiment.reset is not None:
            failed = await self.hooks.reset(session, first)
            if failed is not None:
                record_round("failed")
                raise HostStopped(
                    session.host,
                    f"reset before round {r} failed: "
                    + describe_failure(failed, "reset")
                    + stderr_line(failed),
                )
            reset_status = "ok"
        warm_before = ran = 0
        recorded = False  # the round's row went in with its last trial's transaction
        first_failure: TrialRecord | None = None
        all_failed = True
        last = len(trials) - 1
        phased = plan.trial_phase is not None
        for position, t in enumerate(trials):
            if phased:
                warm_before += plan.phase(t) == "warmup"
            if t in state.finished:
                continue
            if stopping and self.stop_rule.skipped(t):
                continue
            if state.first_round_failed is not None:
                return  # another host's first round failed throughout: its rest is left unrun
            record = await self.trials.run(session, t, series, r, order_kind)
            self.halting.check()
            ran += 1
            if record.status == "ok":
                all_failed = False
            elif first_failure is None:
                first_failure = record
            stop = None
            if stopping and record.phase == "measured":
                record = attrs.evolve(record, position=position - warm_before)
                stop = self.stop_rule.decide(record, series)
            self.trials.store(record, stop, round_row(reset_status) if position == last else None)
            recorded = recorded or position == last
            if stop is not None:
                self.stop_rule.announce(record, stop)
            if state.interleave or time.monotonic() >= state.loop_turn:
                await asyncio.sleep(0)
                state.loop_turn = time.monotonic() + LOOP_TURN
            if record.timed_out:
                state.timeouts_in_a_row[session.host] = n = (
                    state.timeouts_in_a_row.get(session.host, 0) + 1
                )
                if n >= state.max_consecutive_timeouts:
                    state.timeouts_in_a_row[session.host] = 0
                    self.halting.first_round_ended(
                        r, session.host, ran, first_failure if all_failed else None
                    )
                    if state.first_round_failed is not None:
                        return  # the run is failing fast: this host is not at fault
                    raise HostStopped(session.host, f"{n} trials in a row timed out")
            else:
                state.timeouts_in_a_row[session.host] = 0
        self.halting.check()
        if not recorded:
            record_round(reset_status)
        self.halting.first_round_ended(r, session.host, ran, first_failure if all_failed else None)
