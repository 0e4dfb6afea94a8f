"""The executor: runs a plan through a backend, one queue of rounds per host, and commits
every finished trial to the store before the next one starts. Its rooms: scheduling (rounds
onto hosts), rounds (a round on its host), trial (a trial's life), hooks (sessions, setup,
reset, teardown), stopping_rule (the spec's stop), halting (signals, a failed store, failing
fast), reaping (nothing left running), failures (how a failed command is told)."""

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
from benchlang.run.executor.rounds import Rounds
from benchlang.run.executor.scheduling import Scheduling
from benchlang.run.executor.stopping_rule import StoppingRule
from benchlang.run.executor.trial import TrialLife
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


class Executor(Scheduling, Rounds, TrialLife, Hooks, StoppingRule, Halting):
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
        self.experiment = experiment
        self.plan = plan
        self.backend = backend
        self.store = store
        self.progress = progress
        self.plan_hash = plan.hash
        self.benchmarks = {b.name: b for b in experiment.benchmarks}
        self.hidden = {h.name: h for h in experiment.hidden}
        self.finished = store.finished_trials(self.plan_hash)
        self.failed = 0
        self.ran = 0
        self.hosts_down: list[tuple[str, str]] = []
        self.run_started = 0.0
        self.retries = retries
        self.backoff = backoff
        self.reconnect_timeout = reconnect_timeout
        self.max_consecutive_timeouts = max_consecutive_timeouts
        groups = tuple((h,) for h in plan.hosts) if pin_hosts else plan.host_groups
        self.groups = {h: group for group in groups for h in group}
        self._orphans: dict[tuple[str, ...], list[int]] = {g: [] for g in self.groups.values()}
        self._busy: set[str] = set()
        self._wake = asyncio.Event()
        self._timeouts_in_a_row: dict[str, int] = {}
        self.stopping = StoppingController(experiment)
        self.not_needed = 0
        self.reap = reap
        self.interrupted: int | None = None
        self._halting = False
        self.fail_fast = fail_fast
        self.first_round_failed: FirstRoundFailed | None = None
        self._first_round_judged = False
        self._error: BaseException | None = None
        self._tasks: list[asyncio.Task] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.leases = LeaseKeeper(backend, store, self.plan_hash, spec_dir)
        self._per_trial = 0.0  # the longest a trial took here, round time / trials
        self._command_kept: dict[tuple[int, str], tuple] = {}  # trial.py: _command_parts
        self._interleave = len(plan.hosts) > 1
        """Yield to the event loop after each trial, so that host tasks whose backend answers
        without suspending take turns; one host task yields every ``LOOP_TURN`` (rounds.py),
        so that a cancellation or another task on the loop is not held up for the whole run
        (a signal's halt is seen by ``_check_halt`` after each trial)."""
        self._loop_turn = 0.0
        if self.stopping.active:
            self._restore_stopping()

    async def run(self) -> RunSummary:
        """Acquire (or attach to) the lease, run every round, release the lease: always, also
        when a trial, the store or a signal ends the run (docs/plugins.md#lifecycle)."""
        t0 = time.monotonic()
        already = len(self.finished)
        self._loop = asyncio.get_running_loop()
        try:
            if await self._take_lease():
                await self._run_rounds()
        finally:
            await self._give_back()
        if self._error is not None:
            raise self._error
        return RunSummary(
            self.plan_hash,
            self.plan.n_trials,
            already,
            self.ran,
            self.failed,
            tuple(self.hosts_down),
            time.monotonic() - t0,
            self._count_not_needed(),
            self.interrupted,
            self.first_round_failed,
        )

    async def _take_lease(self) -> bool:
        """The lease, stored before any trial runs; False when a signal came first."""
        size_allocation(self.backend, self.experiment)
        task = asyncio.ensure_future(self.leases.take())
        self._tasks = [task]
        if self._halting:
            task.cancel()
        try:
            lease = await task
        except asyncio.CancelledError:
            if self._halting:
                return False
            raise
        except Exception as err:
            self._error = err
            return False
        finally:
            self._tasks = []
        for note in self.leases.notes:
            self.progress.note(note)
        if lease.hosts and any(k != v for k, v in lease.hosts.items()):
            where = ", ".join(f"{k}={v}" for k, v in lease.hosts.items())
            self.progress.note(f"lease {lease.id} ({lease.kind}): {where}")
        return not self._halting

    async def _give_back(self) -> None:
        problem = await self.leases.give_back()
        if problem is not None:
            text = f"{problem}; release it with: benchlang hosts release {self.store.path}"
            with contextlib.suppress(Exception):
                self.store.record_event(self.plan_hash, "lease", text)
            self.progress.note(text)
