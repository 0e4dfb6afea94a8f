"""The executor: runs a plan through a backend, one queue of rounds per host, and commits
every finished trial to the store before the next one starts."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from benchlang import model
from benchlang.backends.base import Backend, Command, Execution, HostDown, HostSession
from benchlang.plan.compile import substitute
from benchlang.plan.plan import ORDER_KINDS, Plan
from benchlang.run.measures import MeasureError, extract
from benchlang.run.progress import Progress
from benchlang.run.store import Store, TrialRecord

TRANSIENT_RETRIES = 3
RETRY_BACKOFF = 0.5


@attrs.frozen
class RunSummary:
    plan_hash: str
    total: int
    already_done: int
    ran: int
    failed: int
    hosts_down: tuple[tuple[str, str], ...]
    duration: float


class HostStopped(Exception):
    """This host's remaining rounds cannot run (failed setup or reset, host down)."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.message = message


def _describe_failure(execution: Execution, what: str) -> str:
    if execution.timed_out:
        return f"{what} timed out after {execution.wall_time:.3g}s"
    if execution.exit_status < 0:
        return f"{what} was killed by signal {-execution.exit_status}"
    return f"{what} exited with status {execution.exit_status}"


def _stderr_line(execution: Execution) -> str:
    lines = [line for line in execution.stderr.decode(errors="replace").splitlines() if line.strip()]
    return f": {lines[-1][:200]}" if lines else ""


class Executor:
    def __init__(self, experiment: model.Experiment, plan: Plan, backend: Backend, store: Store, progress: Progress) -> None:
        self.experiment = experiment
        self.plan = plan
        self.backend = backend
        self.store = store
        self.progress = progress
        self.plan_hash = plan.hash
        self.benchmarks = {b.name: b for b in experiment.benchmarks}
        self.finished = store.finished_trials(self.plan_hash)
        self.failed = 0
        self.ran = 0
        self.hosts_down: list[tuple[str, str]] = []
        self.run_started = 0.0

    async def run(self) -> RunSummary:
        t0 = time.monotonic()
        already = len(self.finished)
        self.run_started = self.store.mark_run_started(self.plan_hash)
        hosts = self.plan.hosts
        rounds_by_host = {h: np.flatnonzero(self.plan.round_host == i).tolist() for i, h in enumerate(hosts)}
        await asyncio.gather(*(self._host(host, rounds_by_host[host]) for host in hosts))
        return RunSummary(self.plan_hash, self.plan.n_trials, already, self.ran, self.failed, tuple(self.hosts_down), time.monotonic() - t0)

    def _pending_rounds(self, rounds: list[int]) -> list[int]:
        bounds = self.plan.round_bounds
        return [r for r in rounds if any(t not in self.finished for t in range(bounds[r], bounds[r + 1]))]

    async def _host(self, host: str, rounds: list[int]) -> None:
        pending = self._pending_rounds(rounds)
        if not pending:
            return
        try:
            session = await self.backend.open(host)
        except (HostDown, OSError) as err:
            self._host_down(host, f"cannot connect: {err}")
            return
        try:
            self.store.record_host(self.plan_hash, host, await session.facts())
            await self._setup(session)
            for r in pending:
                await self._round(session, r)
        except HostStopped as err:
            self._host_down(err.host, err.message)
        except HostDown as err:
            self._host_down(err.host, err.message)
        finally:
            try:
                if self.experiment.teardown:
                    await session.execute(Command(self.experiment.teardown, self._env({}), self._cwd(None), self.experiment.timeout))
            except (HostDown, OSError):
                pass
            await session.close()

    def _host_down(self, host: str, message: str) -> None:
        self.hosts_down.append((host, message))
        self.store.record_event(self.plan_hash, "host_down", message, host)
        self.progress.note(f"host {host} stopped: {message}")

    def _cwd(self, bench: model.Benchmark | None) -> str | None:
        return (bench.workdir if bench and bench.workdir else None) or self.experiment.workdir

    def _env(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = dict(self.experiment.env)
        if self.experiment.design.runtime is not None:
            env["BENCHLANG_RUNTIME"] = f"{self.experiment.design.runtime:g}"
        env.update(extra)
        return env

    async def _checked(self, session: HostSession, command: Command, what: str) -> Execution:
        execution = await session.execute(command)
        if not execution.ok:
            raise HostStopped(session.host, _describe_failure(execution, what) + _stderr_line(execution))
        return execution

    async def _setup(self, session: HostSession) -> None:
        exp = self.experiment
        if exp.setup:
            await self._checked(session, Command(exp.setup, self._env({}), self._cwd(None), exp.timeout), "setup")
        for bench in exp.benchmarks:
            if not bench.setup:
                continue
            commands = dict.fromkeys(
                substitute(bench.setup, self._values(c.levels)) for c in self.plan.configurations if c.benchmark == bench.name
            )
            for command in commands:
                await self._checked(session, Command(command, self._env({}), self._cwd(bench), bench.timeout or exp.timeout), f"setup of benchmark {bench.name}")

    def _values(self, levels: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
        values = dict(levels)
        if self.experiment.design.runtime is not None:
            runtime = self.experiment.design.runtime
            values["runtime"] = int(runtime) if float(runtime).is_integer() else runtime
        return values

    async def _round(self, session: HostSession, r: int) -> None:
        plan = self.plan
        series = int(plan.round_series[r])
        wait = self.run_started + float(plan.series_start[series]) - time.time()
        if wait > 0:
            self.progress.note(f"series {series} starts in {wait:.0f}s (spread over the span)")
            await asyncio.sleep(wait)
        bounds = plan.round_bounds
        trials = range(int(bounds[r]), int(bounds[r + 1]))
        order_kind = ORDER_KINDS[int(plan.round_order[r])]
        permutation = plan.trial_configuration[bounds[r] : bounds[r + 1]].tolist()
        started = time.time()
        reset_status = "none"
        reset = self.experiment.reset
        if reset is not None and reset.command:
            execution = await session.execute(Command(reset.command, self._env({}), self._cwd(None), self.experiment.timeout))
            if reset.reboot or reset.reconnect:
                await session.reconnect(self.experiment.timeout or 600.0)
            elif not execution.ok:
                self.store.record_round(self.plan_hash, r, session.host, order_kind, permutation, started, time.time(), "failed")
                raise HostStopped(session.host, f"reset before round {r} failed: " + _describe_failure(execution, "reset") + _stderr_line(execution))
            reset_status = "ok"
        for t in trials:
            if t in self.finished:
                continue
            record = await self._trial(session, t, series, r, order_kind)
            self.store.record_trial(self.plan_hash, record)
            self.finished.add(t)
            self.ran += 1
            self.failed += record.status != "ok"
            self.progress.advance(record.status != "ok")
        self.store.record_round(self.plan_hash, r, session.host, order_kind, permutation, started, time.time(), reset_status)

    async def _trial(self, session: HostSession, t: int, series: int, r: int, order_kind: str) -> TrialRecord:
        plan = self.plan
        config = plan.configurations[int(plan.trial_configuration[t])]
        bench = self.benchmarks[config.benchmark]
        values = self._values(config.levels)
        bench_env = {k: v.format_map({k2: str(v2) for k2, v2 in values.items()}) for k, v in bench.env}
        env = self._env({
            **bench_env,
            "BENCHLANG_TRIAL": str(t),
            "BENCHLANG_SEED": str(int(plan.trial_seed[t])),
            "BENCHLANG_CONFIGURATION": config.label,
            "BENCHLANG_HOST": session.host,
        })
        cwd = self._cwd(bench)
        timeout = bench.timeout or self.experiment.timeout
        hooks_before = [h for h in (self.experiment.before, bench.before and substitute(bench.before, values)) if h]
        hooks_after = [h for h in (bench.after and substitute(bench.after, values), self.experiment.after) if h]
        attempts = 0
        while True:
            attempts += 1
            try:
                status, reason, execution, measures, series_values = await self._attempt(session, config.command, env, cwd, timeout, hooks_before, hooks_after, bench)
                break
            except HostDown:
                if attempts > TRANSIENT_RETRIES:
                    raise
                await asyncio.sleep(RETRY_BACKOFF * 2 ** (attempts - 1))
                await session.reconnect(30.0)
        return TrialRecord(
            trial=t, series=series, round=r, position=int(plan.trial_position[t]), host=session.host,
            configuration=config.index, label=config.label, benchmark=config.benchmark,
            levels=dict(config.levels), order_kind=order_kind, status=status, reason=reason,
            exit_status=execution.exit_status, timed_out=execution.timed_out,
            started=execution.started, ended=execution.ended, attempts=attempts,
            stdout_tail=execution.stdout, stderr_tail=execution.stderr,
            measures=measures, series_values=series_values,
        )

    async def _attempt(self, session, command, env, cwd, timeout, hooks_before, hooks_after, bench):
        for hook in hooks_before:
            execution = await session.execute(Command(hook, env, cwd, timeout))
            if not execution.ok:
                return "failed", _describe_failure(execution, "before hook") + _stderr_line(execution), execution, {}, {}
        execution = await session.execute(Command(command, env, cwd, timeout))
        measures = {k: float(v) for k, v in execution.rusage.items()}
        if not execution.ok:
            return "failed", _describe_failure(execution, "the command"), execution, measures, {}
        series_values: dict[str, np.ndarray] = {}
        try:
            for measure in bench.measures:
                value = await self._read_measure(session, measure, execution, cwd)
                if isinstance(value, np.ndarray):
                    series_values[measure.name] = value
                else:
                    measures[measure.name] = value
        except MeasureError as err:
            return "failed", f"measure: {err}", execution, measures, series_values
        for hook in hooks_after:
            after = await session.execute(Command(hook, env, cwd, timeout))
            if not after.ok:
                return "failed", _describe_failure(after, "after hook") + _stderr_line(after), execution, measures, series_values
        return "ok", None, execution, measures, series_values

    async def _read_measure(self, session: HostSession, measure: model.Measure, execution: Execution, cwd: str | None) -> float | np.ndarray:
        if measure.source == "builtin":
            if measure.builtin not in execution.rusage:
                raise MeasureError(f"{measure.name}: the backend does not report {measure.builtin}")
            return float(execution.rusage[measure.builtin])
        if measure.source in ("stdout", "stderr"):
            data = execution.stdout if measure.source == "stdout" else execution.stderr
            return extract(measure, data.decode(errors="replace"), measure.source)
        try:
            data = await session.read_file(measure.path, cwd)
        except OSError as err:
            raise MeasureError(f"{measure.name}: cannot read {measure.path}: {err.strerror or err}") from None
        return extract(measure, data.decode(errors="replace"), measure.path)
