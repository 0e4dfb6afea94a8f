"""The executor: runs a plan through a backend, one queue of rounds per host, and commits
every finished trial to the store before the next one starts."""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import os
import signal
import time
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from benchlang import model
from benchlang.backends.base import (
    Backend,
    Command,
    Execution,
    HostDown,
    HostSession,
    capabilities_of,
)
from benchlang.lang.shell import parse_template, text_of
from benchlang.plan.configurations import placeholder_values, substitute
from benchlang.plan.plan import ORDER_KINDS, Plan
from benchlang.run.counters import perf_command, probe_command, read_counters
from benchlang.run.hidden import (
    aslr_of,
    drop_caches_command,
    drop_caches_refusal,
    hidden_environment,
    reboots,
)
from benchlang.run.leases import LeaseKeeper
from benchlang.run.measures import MeasureError, extract, extract_output
from benchlang.run.progress import Progress
from benchlang.run.stopping import StoppingController, decision_from_row
from benchlang.run.store import StopRecord, Store, TrialRecord
from benchlang.run.trial_metric import metric_values

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


def _descendants(root: int) -> list[int]:
    """Live (not zombie) processes descending from ``root``, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields[0] in (b"Z", b"X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants() -> int:
    """SIGKILL every process this one started, directly or not: each one's whole process group
    (a trial runs in its own), or the process alone when it shares this process's group.
    Repeats until none is left alive (a process may fork while its group is being killed).
    Returns how many processes were found. Safe to call from a signal handler."""
    me, own_group = os.getpid(), os.getpgrp()
    total = 0
    for _ in range(10):
        pids = _descendants(me)
        if not pids:
            break
        total += len(pids)
        for pid in pids:
            try:
                group = os.getpgid(pid)
                if group == own_group:
                    os.kill(pid, signal.SIGKILL)
                else:
                    os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
        time.sleep(0.005)
    return total


class HostStopped(Exception):
    """This host's remaining rounds cannot run (failed setup or reset, host down)."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.message = message


def _describe_failure(execution: Execution, what: str) -> str:
    if execution.failure:
        return f"{what} failed: {execution.failure}"
    if execution.timed_out:
        return f"{what} timed out after {execution.wall_time:.3g}s"
    if execution.exit_status < 0:
        return f"{what} was killed by signal {-execution.exit_status}"
    return f"{what} exited with status {execution.exit_status}"


def _stderr_line(execution: Execution) -> str:
    lines = [
        line for line in execution.stderr.decode(errors="replace").splitlines() if line.strip()
    ]
    return f": {lines[-1][:200]}" if lines else ""


class Executor:
    """Runs a plan: one task per host, each running its rounds in plan order.

    When a host stops (cannot connect, failed setup or reset, connection lost and not back
    after ``retries`` reconnections, ``max_consecutive_timeouts`` trials in a row timing out),
    its unfinished rounds go to a queue that the healthy hosts of its group
    (``Plan.host_groups``) drain in plan order: every host in a plain plan, the equal hosts of
    a redundant one. A host alone in its group (A/B layouts, whose host batches belong to their
    host; hardware factors; ``pin_hosts``) leaves them unrun, for ``--resume`` to run on the same
    host once it is back. A trial whose connection drops is retried with exponential backoff,
    at most ``retries`` times; the attempts are stored with it.
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
        self._error: BaseException | None = None
        self._tasks: list[asyncio.Task] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self.leases = LeaseKeeper(backend, store, self.plan_hash, spec_dir)
        self._per_trial = 0.0  # the longest a trial took here, round time / trials
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
        )

    async def _run_rounds(self) -> None:
        self.run_started = self.store.mark_run_started(self.plan_hash)
        hosts = self.plan.hosts
        rounds_by_host = {
            h: np.flatnonzero(self.plan.round_host == i).tolist() for i, h in enumerate(hosts)
        }
        self._busy = set(hosts)
        self._tasks = [
            asyncio.ensure_future(self._guarded(host, rounds_by_host[host])) for host in hosts
        ]
        if self._halting:  # interrupted before the tasks existed
            self._cancel_all()
        await asyncio.gather(*self._tasks)

    async def _take_lease(self) -> bool:
        """The lease, stored before any trial runs; False when a signal came first."""
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

    async def _reboot(self, session: HostSession, r: int) -> None:
        """Reboot the host before round ``r`` (the hidden factor ``reboot`` drew it): through
        the provider when it can, else ``reboot`` on the host; then reconnect. A reboot
        command that fails stops the host: its trials must not be stored as rebooted."""
        try:
            if self._can_power("reboot"):
                self._check_halt()
                await self.backend.power(session.host, "reboot")
            else:
                execution = await self._exec(
                    session,
                    Command(
                        "reboot",
                        self._env({"BENCHLANG_HOST": session.host}),
                        self._cwd(None),
                        self.experiment.timeout,
                    ),
                )
                if not execution.ok:
                    raise HostStopped(
                        session.host,
                        f"hidden factor reboot before round {r}: "
                        + _describe_failure(execution, "reboot")
                        + _stderr_line(execution),
                    )
        except HostDown:
            pass  # the connection dropped: the host is going down
        await session.reconnect(self.experiment.timeout or 600.0)

    def _can_power(self, action: str) -> bool:
        """The backend declares ``action`` and does it through its provider (``power``)."""
        return action in capabilities_of(self.backend) and hasattr(self.backend, "power")

    async def _lease_allows(self, host: str, r: int, queue: list[int]) -> bool:
        """Whether round ``r`` can finish before the lease ends (extending it when the backend
        can); if not, this host's rounds are left for ``--resume`` under a new lease."""
        lease = self.leases.lease
        if lease is None or lease.expires is None:
            return True  # no deadline: skip counting every queued round (quadratic in rounds)
        n = len(self._unfinished(r))
        needed = self._per_trial * n
        more = self._per_trial * sum(len(self._unfinished(q)) for q in queue)
        reason = await self.leases.time_left(needed, more)
        if reason is None:
            return True
        rounds = self._pending_rounds([r, *queue[::-1]])
        text = f"{len(rounds)} rounds of {host} left unrun: {reason}; continue with --resume"
        self.store.record_event(self.plan_hash, "unrun", text, host)
        self.progress.note(text)
        return False

    # -- stopping early ------------------------------------------------------------------
    #
    # A signal or a failed store write halts the run: every host task is cancelled, and the
    # backend's execute kills its command's process group on cancellation (the HostSession
    # contract, docs/plugins.md); with ``reap`` (benchlang run) every process descending from
    # this one is also killed, so nothing is left running even when a backend cannot be
    # cancelled. A trial that was running is not stored (its result would be the kill's):
    # ``--resume`` runs it again.

    def interrupt(self, signum: int) -> None:
        """Stop the run because of a signal. Callable from a signal handler, more than once:
        each call kills again what is left and cancels again what is still cleaning up."""
        if self.interrupted is None:
            self.interrupted = signum
        self._halting = True
        if self.reap:
            kill_descendants()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel_all)

    def _halt(self, error: BaseException) -> None:
        """A host task failed in a way that ends the whole run (the store cannot be written)."""
        if self._error is None:
            self._error = error
        self._halting = True
        if self.reap:
            kill_descendants()
        self._cancel_all()

    def _cancel_all(self) -> None:
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current and not task.done():
                task.cancel()

    def _check_halt(self) -> None:
        if self._halting:
            raise asyncio.CancelledError

    async def _guarded(self, host: str, rounds: list[int]) -> None:
        try:
            await self._host(host, rounds)
        except asyncio.CancelledError:
            if not self._halting:
                raise
        except Exception as err:
            self._halt(err)

    async def _exec(self, session: HostSession, command: Command) -> Execution:
        """Every command goes through here: none starts once the run is halting, and none
        that ended while it was halting counts."""
        self._check_halt()
        execution = await session.execute(command)
        self._check_halt()
        return execution

    def _pending_rounds(self, rounds: list[int]) -> list[int]:
        return [r for r in rounds if self._unfinished(r)]

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

    async def _host(self, host: str, rounds: list[int]) -> None:
        queue = self._pending_rounds(rounds)
        queue.reverse()
        session: HostSession | None = None
        current: int | None = None
        try:
            while True:
                current = queue.pop() if queue else await self._adopt(host)
                if current is None:
                    break
                if not await self._lease_allows(host, current, queue):
                    current = None
                    break
                if session is None:
                    session = await self._open(host)
                n, began = len(self._unfinished(current)), time.monotonic()
                await self._round(session, current)
                if n:
                    self._per_trial = max(self._per_trial, (time.monotonic() - began) / n)
                current = None
        except (HostStopped, HostDown) as err:
            self._host_down(
                host, err.message, ([current] if current is not None else []) + queue[::-1]
            )
        except OSError as err:
            self._host_down(
                host,
                f"{type(err).__name__}: {err}",
                ([current] if current is not None else []) + queue[::-1],
            )
        finally:
            self._busy.discard(host)
            self._wake.set()
            if session is not None:
                await self._close(session)

    async def _open(self, host: str) -> HostSession:
        """Connect, record the host's facts and run setup; any failure stops the host."""
        try:
            session = await self.backend.open(host)
        except OSError as err:
            raise HostStopped(host, f"cannot connect: {err}") from None
        except HostDown as err:
            raise HostStopped(
                host,
                err.message
                if err.message.startswith("cannot")
                else f"cannot connect: {err.message}",
            ) from None
        try:
            facts = dict(await session.facts())
            address = self.leases.address(host)
            if address is not None:
                facts["address"] = address
            self.store.record_host(self.plan_hash, host, facts)
            await self._setup(session)
        except BaseException:
            await self._close(session)
            raise
        return session

    async def _close(self, session: HostSession) -> None:
        """Run the teardown (not when the run is halting) and close the session."""
        try:
            if self.experiment.teardown and not self._halting:
                with contextlib.suppress(HostDown, OSError):
                    await self._exec(
                        session,
                        Command(
                            self._experiment_command(self.experiment.teardown),
                            self._env({}),
                            self._cwd(None),
                            self.experiment.timeout,
                        ),
                    )
        finally:
            with contextlib.suppress(HostDown, OSError):
                await session.close()

    async def _adopt(self, host: str) -> int | None:
        """This host's own rounds are done: take a round a stopped host of its group left (plan
        order), or return None once no host of its group that could still stop is running."""
        self._busy.discard(host)
        self._wake.set()
        group = self.groups[host]
        orphans = self._orphans[group]
        while True:
            if orphans:
                self._busy.add(host)
                return heapq.heappop(orphans)
            if not self._busy.intersection(group):
                return None
            self._wake.clear()
            await self._wake.wait()

    def _host_down(self, host: str, message: str, rounds: Sequence[int] = ()) -> None:
        if self._halting:  # the run is stopping: nothing is reassigned, the host is not at fault
            return
        self.hosts_down.append((host, message))
        self.store.record_event(self.plan_hash, "host_down", message, host)
        self.progress.note(f"host {host} stopped: {message}")
        rounds = self._pending_rounds(rounds)
        if not rounds:
            return
        n_trials = sum(len(self._unfinished(r)) for r in rounds)
        group = self.groups[host]
        if len(group) == 1:
            text = f"{len(rounds)} rounds ({n_trials} trials) pinned to {host} left unrun: continue with --resume once it is back"
            self.store.record_event(self.plan_hash, "unrun", text, host)
            self.progress.note(text)
            return
        for r in rounds:
            heapq.heappush(self._orphans[group], r)
        down = {h for h, _ in self.hosts_down}
        healthy = [h for h in group if h not in down]
        nobody = (
            "no healthy host remains"
            if len(group) == len(self.plan.hosts)
            else f"no equal host of {', '.join(group)} remains: continue with --resume once one is back"
        )
        text = (
            f"{len(rounds)} rounds ({n_trials} trials) of {host} reassigned to {', '.join(healthy)}"
            if healthy
            else f"{len(rounds)} rounds ({n_trials} trials) of {host} left unrun: {nobody}"
        )
        self.store.record_event(self.plan_hash, "reassigned" if healthy else "unrun", text, host)
        self.progress.note(text)
        self._wake.set()

    def _unfinished(self, r: int) -> list[int]:
        bounds = self.plan.round_bounds
        todo = [t for t in range(int(bounds[r]), int(bounds[r + 1])) if t not in self.finished]
        if self.stopping.active:
            todo = [t for t in todo if not self._skipped(t)]
        return todo

    def _cwd(self, bench: model.Benchmark | None) -> str | None:
        return (bench.workdir if bench and bench.workdir else None) or self.experiment.workdir

    def _env(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = dict(self.experiment.env)
        if self.experiment.design.runtime is not None:
            env["BENCHLANG_RUNTIME"] = f"{self.experiment.design.runtime:g}"
        env.update(extra)
        return env

    async def _checked(self, session: HostSession, command: Command, what: str) -> Execution:
        execution = await self._exec(session, command)
        if not execution.ok:
            raise HostStopped(
                session.host, _describe_failure(execution, what) + _stderr_line(execution)
            )
        return execution

    async def _setup(self, session: HostSession) -> None:
        exp = self.experiment
        refusal = await drop_caches_refusal(self.hidden, session, self._exec)
        if refusal is not None:
            raise HostStopped(session.host, refusal)
        counted = [m for b in exp.benchmarks for m in b.counters]
        if counted:
            await self._checked(
                session, Command(probe_command(counted), timeout=60.0), "perf stat (counters)"
            )
        if exp.setup:
            await self._checked(
                session,
                Command(
                    self._experiment_command(exp.setup), self._env({}), self._cwd(None), exp.timeout
                ),
                "setup",
            )
        for bench in exp.benchmarks:
            if not bench.setup:
                continue
            commands = dict.fromkeys(
                substitute(bench.setup, self._values(c.levels))
                for c in self.plan.configurations
                if c.benchmark == bench.name
            )
            for command in commands:
                await self._checked(
                    session,
                    Command(command, self._env({}), self._cwd(bench), bench.timeout or exp.timeout),
                    f"setup of benchmark {bench.name}",
                )

    def _experiment_command(self, template: str) -> str:
        """An experiment-level command with {runtime} filled in and {{ }} unescaped."""
        return substitute(template, self._values(()))

    def _reset_command(self, template: str, first_trial: int) -> str:
        """The reset before a round; in a layout a round is one version's host batch, so the
        reset may start that version (``{version}``)."""
        config = self.plan.configurations[int(self.plan.trial_configuration[first_trial])]
        version = (
            tuple((k, v) for k, v in config.levels if k == model.VERSION_FACTOR)
            if self.plan.layout
            else ()
        )
        return substitute(template, self._values(version))

    def _values(self, levels: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
        return placeholder_values(self.experiment, levels)

    async def _round(self, session: HostSession, r: int) -> None:
        plan = self.plan
        series = int(plan.round_series[r])
        start = plan.series_start[series] if plan.round_start is None else plan.round_start[r]
        wait = self.run_started + float(start) - time.time()
        if wait > 0:
            self.progress.note(
                f"round {r} (series {series}) starts in {wait:.0f}s (spread over the span)"
            )
            await asyncio.sleep(wait)
        bounds = plan.round_bounds
        trials = range(int(bounds[r]), int(bounds[r + 1]))
        order_kind = ORDER_KINDS[int(plan.round_order[r])]
        stopping = self.stopping.active
        if stopping:
            trials = [t for t in trials if t in self.finished or not self._skipped(t)]
            if not any(t not in self.finished for t in trials):
                return
        permutation = plan.trial_configuration[list(trials)].tolist()
        started = time.time()
        if reboots(self.hidden, plan.plan_levels(int(bounds[r]))):
            await self._reboot(session, r)
        reset_status = "none"
        reset = self.experiment.reset
        if reset is not None:
            command = (
                self._reset_command(reset.command, int(bounds[r])) if reset.command else "reboot"
            )
            try:
                if reset.power is not None and (
                    reset.power != "reboot" or self._can_power("reboot")
                ):
                    self._check_halt()  # the provider reboots, power-cycles or reimages
                    await self.backend.power(session.host, reset.power)
                else:
                    execution = await self._exec(
                        session,
                        Command(
                            command,
                            self._env({"BENCHLANG_HOST": session.host}),
                            self._cwd(None),
                            self.experiment.timeout,
                        ),
                    )
            except HostDown:
                if not (reset.reboot or reset.reconnect):
                    raise
            if reset.reboot or reset.reconnect:
                await session.reconnect(self.experiment.timeout or 600.0)
            elif not execution.ok:
                self.store.record_round(
                    self.plan_hash,
                    r,
                    session.host,
                    order_kind,
                    permutation,
                    started,
                    time.time(),
                    "failed",
                )
                raise HostStopped(
                    session.host,
                    f"reset before round {r} failed: "
                    + _describe_failure(execution, "reset")
                    + _stderr_line(execution),
                )
            reset_status = "ok"
        warm_before = 0
        for position, t in enumerate(trials):
            warm_before += plan.phase(t) == "warmup"
            if t in self.finished:
                continue
            if stopping and self._skipped(t):
                continue
            record = await self._trial(session, t, series, r, order_kind)
            self._check_halt()
            stop = None
            if stopping and record.phase == "measured":
                record = attrs.evolve(record, position=position - warm_before)
                stop = self._decide(record, series)
            self._store_trial(record, stop)
            if stop is not None:
                self._announce_stop(record, stop)
            await asyncio.sleep(0)
            if record.timed_out:
                self._timeouts_in_a_row[session.host] = n = (
                    self._timeouts_in_a_row.get(session.host, 0) + 1
                )
                if n >= self.max_consecutive_timeouts:
                    self._timeouts_in_a_row[session.host] = 0
                    raise HostStopped(session.host, f"{n} trials in a row timed out")
            else:
                self._timeouts_in_a_row[session.host] = 0
        self._check_halt()
        self.store.record_round(
            self.plan_hash,
            r,
            session.host,
            order_kind,
            permutation,
            started,
            time.time(),
            reset_status,
        )

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

    def _store_trial(self, record: TrialRecord, stop: StopRecord | None = None) -> None:
        self.store.record_trial(self.plan_hash, record, stop)
        self.finished.add(record.trial)
        self.ran += 1
        self.failed += record.status != "ok"
        self.progress.advance(record.status != "ok")

    async def _trial(
        self, session: HostSession, t: int, series: int, r: int, order_kind: str
    ) -> TrialRecord:
        plan = self.plan
        config = plan.configurations[int(plan.trial_configuration[t])]
        bench = self.benchmarks[config.benchmark]
        values = self._values(config.levels)
        drawn = plan.plan_levels(t)
        values.update((k, v) for k, v in drawn.items() if k in self.hidden)
        bench_env = {
            k: v.format_map({k2: text_of(v2) for k2, v2 in values.items()}) for k, v in bench.env
        }
        env = self._env(
            {
                **bench_env,
                **hidden_environment(self.hidden, drawn),
                "BENCHLANG_TRIAL": str(t),
                "BENCHLANG_SEED": str(int(plan.trial_seed[t])),
                "BENCHLANG_CONFIGURATION": config.label,
                "BENCHLANG_HOST": session.host,
            }
        )
        cwd = self._cwd(bench)
        timeout = bench.timeout or self.experiment.timeout
        exp_before = self.experiment.before and self._experiment_command(self.experiment.before)
        exp_after = self.experiment.after and self._experiment_command(self.experiment.after)
        hooks_before = [
            h
            for h in (
                drop_caches_command(self.hidden, drawn),
                exp_before,
                bench.before and substitute(bench.before, values),
            )
            if h
        ]
        command = config.command
        if bench.hidden:
            command = parse_template(bench.command).render(values)
        if bench.counters:
            command = perf_command(command, bench.counters)
        hooks_after = [h for h in (bench.after and substitute(bench.after, values), exp_after) if h]
        attempts = 0
        while True:
            attempts += 1
            try:
                status, reason, execution, measures, series_values = await self._attempt(
                    session,
                    Command(command, env, cwd, timeout, aslr=aslr_of(self.hidden, drawn)),
                    hooks_before,
                    hooks_after,
                    bench,
                )
                if execution.left_running:
                    self.store.record_event(
                        self.plan_hash,
                        "left_running",
                        f"trial {t}: {execution.left_running} processes the command left "
                        "running were killed when it ended",
                        session.host,
                    )
                break
            except HostDown as err:
                if attempts > self.retries:
                    raise
                text = f"trial {t} attempt {attempts}: {err.message}"
                self.store.record_event(self.plan_hash, "retry", text, session.host)
                self.progress.note(f"host {session.host}: {text}; trying again")
                await asyncio.sleep(self.backoff * 2 ** (attempts - 1))
                await session.reconnect(self.reconnect_timeout)
        return TrialRecord(
            trial=t,
            series=series,
            round=r,
            position=int(plan.trial_position[t]),
            host=session.host,
            configuration=config.index,
            label=config.label,
            benchmark=config.benchmark,
            levels={**dict(config.levels), **drawn},
            order_kind=order_kind,
            status=status,
            reason=reason,
            exit_status=execution.exit_status,
            timed_out=execution.timed_out,
            started=execution.started,
            ended=execution.ended,
            attempts=attempts,
            stdout_tail=execution.stdout,
            stderr_tail=execution.stderr,
            measures=measures,
            series_values=series_values,
            phase=plan.phase(t),
        )

    async def _attempt(self, session, trial: Command, hooks_before, hooks_after, bench):
        env, cwd, timeout = trial.env, trial.cwd, trial.timeout
        for hook in hooks_before:
            execution = await self._exec(session, Command(hook, env, cwd, timeout))
            if not execution.ok:
                return (
                    "failed",
                    _describe_failure(execution, "before hook") + _stderr_line(execution),
                    execution,
                    {},
                    {},
                )
        execution = await self._exec(session, trial)
        measures = {k: float(v) for k, v in execution.rusage.items()}
        if bench.counters:
            execution, measures, uncounted = read_counters(execution, bench.counters)
            if uncounted is not None and execution.ok:
                return "failed", f"measure: {uncounted}", execution, measures, {}
        if not execution.ok:
            return "failed", _describe_failure(execution, "the command"), execution, measures, {}
        series_values: dict[str, np.ndarray] = {}
        try:
            for measure in bench.measures:
                if measure.builtin in model.COUNTERS:
                    continue  # read with the execution (run.counters)
                value = await self._read_measure(session, measure, execution, cwd)
                if isinstance(value, np.ndarray):
                    series_values[measure.name] = value
                else:
                    measures[measure.name] = value
        except MeasureError as err:
            return "failed", f"measure: {err}", execution, measures, series_values
        for hook in hooks_after:
            after = await self._exec(session, Command(hook, env, cwd, timeout))
            if not after.ok:
                return (
                    "failed",
                    _describe_failure(after, "after hook") + _stderr_line(after),
                    execution,
                    measures,
                    series_values,
                )
        return "ok", None, execution, measures, series_values

    async def _read_measure(
        self, session: HostSession, measure: model.Measure, execution: Execution, cwd: str | None
    ) -> float | np.ndarray:
        if measure.source == "builtin":
            if measure.builtin not in execution.rusage:
                why = execution.unavailable.get(measure.builtin, "the backend does not report it")
                raise MeasureError(f"{measure.name}: {measure.builtin} is not available: {why}")
            return float(execution.rusage[measure.builtin])
        if measure.source in ("stdout", "stderr"):
            stream = measure.source
            kept, size, path = (
                getattr(execution, stream + suffix) for suffix in ("", "_size", "_path")
            )
            return extract_output(measure, kept, size, path, stream)
        try:
            data = await session.read_file(measure.path, cwd)
        except OSError as err:
            raise MeasureError(
                f"{measure.name}: cannot read {measure.path}: {err.strerror or err}"
            ) from None
        return extract(measure, data.decode(errors="replace"), measure.path)
