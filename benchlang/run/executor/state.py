"""What the executor's parts share: the run's inputs, its counts and the bookkeeping of hosts,
halting and failing fast. One typed object, handed to each part (``core.Executor``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

from benchlang import model
from benchlang.backends.base import Backend
from benchlang.plan.plan import Plan
from benchlang.run.leases import LeaseKeeper
from benchlang.run.progress import Progress
from benchlang.run.stopping import StoppingController
from benchlang.run.store import Store

if TYPE_CHECKING:
    from benchlang.run.executor.failures import FirstRoundFailed


class TrialSetup(NamedTuple):
    """What a trial's command is made of but its number and seed (``trial.TrialRunner``),
    and what is read after it: its levels, the benchmark's counters, simulated measures and
    the measures read from the execution, its output or files (``reads``)."""

    command: str
    env: dict[str, str]
    cwd: str | None
    timeout: float | None
    hooks_before: list[str]
    hooks_after: list[str]
    aslr: bool | None
    limits: model.Machine | None
    bench: model.Benchmark
    levels: Mapping[str, Any]
    counters: tuple[model.Measure, ...]
    simulated: tuple[model.Measure, ...]
    reads: tuple[model.Measure, ...]


@attrs.define(eq=False)
class RunState:
    """The executor's shared state. ``finished`` holds the trials in the store; ``ran`` and
    ``failed`` count this session's; ``orphans`` the rounds a stopped host left to its group
    (``groups``), ``busy`` the hosts still running rounds, ``wake`` tells the idle ones;
    ``halting`` is set by a signal or a failed store write, ``error`` holds the latter."""

    experiment: model.Experiment
    plan: Plan
    backend: Backend
    store: Store
    progress: Progress
    leases: LeaseKeeper
    stopping: StoppingController
    groups: dict[str, tuple[str, ...]]
    retries: int
    backoff: float
    reconnect_timeout: float
    max_consecutive_timeouts: int
    reap: bool
    fail_fast: bool
    plan_hash: str = attrs.field(init=False)
    benchmarks: dict[str, model.Benchmark] = attrs.field(init=False)
    hidden: dict[str, model.Hidden] = attrs.field(init=False)
    finished: set[int] = attrs.field(init=False)
    orphans: dict[tuple[str, ...], list[int]] = attrs.field(init=False)
    interleave: bool = attrs.field(init=False)
    """Yield to the event loop after each trial, so that host tasks whose backend answers
    without suspending take turns; one host task yields every ``LOOP_TURN`` (rounds.py), so
    that a cancellation or another task on the loop is not held up for the whole run (a
    signal's halt is seen by ``Halting.check`` after each trial)."""
    ran: int = 0
    failed: int = 0
    hosts_down: list[tuple[str, str]] = attrs.Factory(list)
    run_started: float = 0.0
    busy: set[str] = attrs.Factory(set)
    wake: asyncio.Event = attrs.Factory(asyncio.Event)
    timeouts_in_a_row: dict[str, int] = attrs.Factory(dict)
    interrupted: int | None = None
    halting: bool = False
    first_round_failed: FirstRoundFailed | None = None
    first_round_judged: bool = False
    error: BaseException | None = None
    tasks: list[asyncio.Future[Any]] = attrs.Factory(list)
    loop: asyncio.AbstractEventLoop | None = None
    per_trial: float = 0.0
    """The longest a trial took here (round time / trials), to know what fits in a lease."""
    command_kept: dict[tuple[int, str], TrialSetup] = attrs.Factory(dict)
    loop_turn: float = 0.0

    def __attrs_post_init__(self) -> None:
        self.plan_hash = self.plan.hash
        self.benchmarks = {b.name: b for b in self.experiment.benchmarks}
        self.hidden = {h.name: h for h in self.experiment.hidden}
        self.finished = self.store.finished_trials(self.plan_hash)
        self.orphans = {g: [] for g in self.groups.values()}
        self.interleave = len(self.plan.hosts) > 1
