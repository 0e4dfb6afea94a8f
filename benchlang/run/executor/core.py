"""The executor: runs a plan through a backend, one queue of rounds per host, and commits
every finished trial to the store before the next one starts. ``Executor`` composes its parts
over one ``RunState`` (state.py): the scheduler (rounds onto hosts, scheduling.py), the round
runner (a round on its host, rounds.py), the trial runner (a trial's life, trial.py), the hooks
(sessions, setup, reset, teardown, hooks.py), the stop rule (the spec's stop, stopping_rule.py)
and halting (signals, a failed store, failing fast, halting.py); reaping.py leaves nothing
running, failures.py tells how a failed command failed."""

from __future__ import annotations

import asyncio
import contextlib
import time

import attrs

from benchlang import model
from benchlang.backends.base import Backend
from benchlang.backends.limits import size_allocation
from benchlang.plan.plan import Plan
from benchlang.run.executor.failures import FirstRoundFailed
from benchlang.run.executor.halting import Halting
from benchlang.run.executor.hooks import Hooks
from benchlang.run.executor.rounds import RoundRunner
from benchlang.run.executor.scheduling import Scheduler
from benchlang.run.executor.state import RunState
from benchlang.run.executor.stopping_rule import StopRule
from benchlang.run.executor.trial import TrialRunner
from benchlang.run.leases import LeaseKeeper
from benchlang.run.progress import Progress
from benchlang.run.stopping import StoppingController
from benchlang.run.store import Store

TRANSIENT_RETRIES = 3
RETRY_BACKOFF = 0.5
RECONNECT_TIMEOUT = 10.0
MAX_CONSECUTIVE_TIMEOUTS = 3


@attrs.frozen
class RunSummary:
    plan_hash: str
    total: int
    already_done: int
    ran: int
    failed: int
    hosts_down: tuple[tuple[str, str], ...]
    duration: float
    not_needed: int = 0
    interrupted: int | None = None
    """The signal (SIGINT, SIGTERM) that stopped the run early, if any."""
    first_round_failed: FirstRoundFailed | None = None
    """Set when the run stopped because every trial of its first round failed (``fail_fast``)."""


class Executor:
    """Runs a plan: one task per host, each running its rounds in plan order.

    When a host stops (cannot connect, failed setup or reset, connection lost and not back
    after ``retries`` reconnections, ``max_consecutive_timeouts`` trials in a row timing out),
    its unfinished rounds go to a queue that the healthy hosts of its group
    (``Plan.host_groups``) drain in plan order: every host in a plain plan, the equal hosts of
    a redundant one. A host alone in its group (A/B layouts, whose host batches belong to their
    host; hardware factors; ``pin_hosts``) leaves them unrun, for ``--resume`` to run on the same
    host once it is back. A trial whose connection drops is retried with exponential backoff,
    at most ``retries`` times; the attempts are stored with it. With ``fail_fast`` (``benchlang
    run`` without ``--keep-going``), a first round whose trials all failed stops the run
    (halting.py).
    """

    def __init__(
        self,
        experiment: model.Experiment,
        plan: Plan,
        backend: Backend,
        store: Store,
        progress: Progress,
        *,
        pin_hosts: bool = False,
        retries: int = TRANSIENT_RETRIES,
        backoff: float = RETRY_BACKOFF,
        reconnect_timeout: float = RECONNECT_TIMEOUT,
        max_consecutive_timeouts: int = MAX_CONSECUTIVE_TIMEOUTS,
        reap: bool = False,
        spec_dir: str | None = None,
        fail_fast: bool = False,
    ) -> None:
        groups = tuple((h,) for h in plan.hosts) if pin_hosts else plan.host_groups
        self.state = state = RunState(
            experiment,
            plan,
            backend,
            store,
            progress,
            leases=LeaseKeeper(backend, store, plan.hash, spec_dir),
            stopping=StoppingController(experiment),
            groups={h: group for group in groups for h in group},
            retries=retries,
            backoff=backoff,
            reconnect_timeout=reconnect_timeout,
            max_consecutive_timeouts=max_consecutive_timeouts,
            reap=reap,
            fail_fast=fail_fast,
        )
        self.halting = Halting(state)
        self.stop_rule = StopRule(state)
        self.hooks = Hooks(state, self.halting)
        self.trials = TrialRunner(state, self.hooks, self.halting)
        self.rounds = RoundRunner(state, self.hooks, self.trials, self.stop_rule, self.halting)
        self.scheduler = Scheduler(state, self.rounds, self.hooks, self.stop_rule, self.halting)
        if state.stopping.active:
            self.stop_rule.restore()

    @property
    def finished(self) -> set[int]:
        """The trials in the store (those it held, and those this run committed)."""
        return self.state.finished

    @property
    def progress(self) -> Progress:
        return self.state.progress

    def interrupt(self, signum: int) -> None:
        """Stop the run because of a signal (``Halting.interrupt``); signal-handler safe."""
        self.halting.interrupt(signum)

    async def run(self) -> RunSummary:
        """Acquire (or attach to) the lease, run every round, release the lease: always, also
        when a trial, the store or a signal ends the run (docs/plugins.md#lifecycle)."""
        state = self.state
        t0 = time.monotonic()
        already = len(state.finished)
        state.loop = asyncio.get_running_loop()
        try:
            if await self._take_lease():
                await self.scheduler.run()
        finally:
            await self._give_back()
        if state.error is not None:
            raise state.error
        return RunSummary(
            state.plan_hash,
            state.plan.n_trials,
            already,
            state.ran,
            state.failed,
            tuple(state.hosts_down),
            time.monotonic() - t0,
            self.stop_rule.count_not_needed(),
            state.interrupted,
            state.first_round_failed,
        )

    async def _take_lease(self) -> bool:
        """The lease, stored before any trial runs; False when a signal came first."""
        state = self.state
        size_allocation(state.backend, state.experiment)
        task = asyncio.ensure_future(state.leases.take())
        state.tasks = [task]
        if state.halting:
            task.cancel()
        try:
            lease = await task
        except asyncio.CancelledError:
            if state.halting:
                return False
            raise
        except Exception as err:
            state.error = err
            return False
        finally:
            state.tasks = []
        for note in state.leases.notes:
            state.progress.note(note)
        if lease.hosts and any(k != v for k, v in lease.hosts.items()):
            where = ", ".join(f"{k}={v}" for k, v in lease.hosts.items())
            state.progress.note(f"lease {lease.id} ({lease.kind}): {where}")
        return not state.halting

    async def _give_back(self) -> None:
        state = self.state
        problem = await state.leases.give_back()
        if problem is not None:
            text = f"{problem}; release it with: benchlang hosts release {state.store.path}"
            with contextlib.suppress(Exception):
                state.store.record_event(state.plan_hash, "lease", text)
            state.progress.note(text)
