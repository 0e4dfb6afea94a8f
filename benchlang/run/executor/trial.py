"""A trial's life: its command built from the configuration and the hidden factors, its hooks,
the command run, its measures read, retried when the connection drops (at most ``retries``
times, with exponential backoff), and committed to the store before the next one starts."""

from __future__ import annotations

import asyncio
from types import MappingProxyType
from typing import Any

import numpy as np

from benchlang import model
from benchlang.backends.base import Command, Execution, HostDown, HostSession
from benchlang.backends.limits import applicable_limits
from benchlang.lang.shell import parse_template, text_of
from benchlang.plan.configurations import substitute
from benchlang.plan.plan import Configuration
from benchlang.run.cachegrind import cachegrind_command, read_simulated
from benchlang.run.counters import counter_outcome, perf_command, read_counters
from benchlang.run.executor.failures import describe_failure, stderr_line
from benchlang.run.executor.halting import Halting
from benchlang.run.executor.hooks import Hooks
from benchlang.run.executor.state import RunState, TrialSetup
from benchlang.run.hidden import aslr_of, drop_caches_command, hidden_environment
from benchlang.run.measures import MeasureError, extract, extract_output
from benchlang.run.store import StopRecord, TrialRecord

Attempt = tuple[str, str | None, Execution, dict[str, float], dict[str, np.ndarray]]
"""An attempt's status, reason, execution, measures and series values."""


class TrialRunner:
    """One trial, from its command to its committed record (a part of ``Executor`` over its
    ``RunState``)."""

    def __init__(self, state: RunState, hooks: Hooks, halting: Halting) -> None:
        self.state = state
        self.hooks = hooks
        self.halting = halting

    async def run(
        self, session: HostSession, t: int, series: int, r: int, order_kind: str
    ) -> TrialRecord:
        state = self.state
        plan = state.plan
        config = plan.configurations[int(plan.trial_configuration[t])]
        drawn = plan.plan_levels(t)
        key = (config.index, session.host)
        setup = None if drawn else state.command_kept.get(key)
        if setup is None:
            setup = self.command_parts(config, session.host, drawn)
            if not drawn:
                state.command_kept[key] = setup
        env = dict(setup.env)
        env["BENCHLANG_TRIAL"] = str(t)
        env["BENCHLANG_SEED"] = str(int(plan.trial_seed[t]))
        command = Command(
            setup.command, env, setup.cwd, setup.timeout, aslr=setup.aslr, limits=setup.limits
        )
        attempts = 0
        while True:
            attempts += 1
            try:
                status, reason, execution, measures, series_values = await self.attempt(
                    session, command, setup
                )
                if execution.left_running:
                    state.store.record_event(
                        state.plan_hash,
                        "left_running",
                        f"trial {t}: {execution.left_running} processes the command left "
                        "running were killed when it ended",
                        session.host,
                    )
                break
            except HostDown as err:
                if attempts > state.retries:
                    raise
                text = f"trial {t} attempt {attempts}: {err.message}"
                state.store.record_event(state.plan_hash, "retry", text, session.host)
                state.progress.note(f"host {session.host}: {text}; trying again")
                await asyncio.sleep(state.backoff * 2 ** (attempts - 1))
                await session.reconnect(state.reconnect_timeout)
        return TrialRecord(
            trial=t,
            series=series,
            round=r,
            position=int(plan.trial_position[t]),
            host=session.host,
            configuration=config.index,
            label=config.label,
            benchmark=config.benchmark,
            levels=setup.levels,
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

    def command_parts(self, config: Configuration, host: str, drawn: dict[str, Any]) -> TrialSetup:
        """What a trial's command is made of but its number and seed: kept per configuration
        and host when the plan draws no level for the trial (``_trial``), built per trial
        otherwise. ``BENCHLANG_TRIAL`` and ``BENCHLANG_SEED`` hold their places in the
        environment's order with empty values."""
        bench = self.state.benchmarks[config.benchmark]
        values = self.hooks.values(config.levels)
        values.update((k, v) for k, v in drawn.items() if k in self.state.hidden)
        bench_env = {
            k: v.format_map({k2: text_of(v2) for k2, v2 in values.items()}) for k, v in bench.env
        }
        template = self.hooks.env(
            {
                **bench_env,
                **hidden_environment(self.state.hidden, drawn),
                "BENCHLANG_TRIAL": "",
                "BENCHLANG_SEED": "",
                "BENCHLANG_CONFIGURATION": config.label,
                "BENCHLANG_HOST": host,
                **({"BENCHLANG_RUNTIME": f"{values['runtime']:g}"} if "runtime" in values else {}),
            }
        )
        exp_before = self.state.experiment.before and self.hooks.experiment_command(
            self.state.experiment.before
        )
        exp_after = self.state.experiment.after and self.hooks.experiment_command(
            self.state.experiment.after
        )
        hooks_before = [
            h
            for h in (
                drop_caches_command(self.state.hidden, drawn),
                exp_before,
                bench.before and substitute(bench.before, values),
            )
            if h
        ]
        command = config.command
        if bench.hidden:
            command = parse_template(bench.command).render(values)
        if bench.simulated:
            command = cachegrind_command(command)
        if bench.counters:
            command = perf_command(command, bench.counters)
        hooks_after = [h for h in (bench.after and substitute(bench.after, values), exp_after) if h]
        limits = applicable_limits(self.state.experiment.machine, self.state.backend)
        return TrialSetup(
            command,
            template,
            self.hooks.cwd(bench),
            bench.timeout or self.state.experiment.timeout,
            hooks_before,
            hooks_after,
            aslr_of(self.state.hidden, drawn),
            limits,
            bench,
            MappingProxyType({**dict(config.levels), **drawn}),
            bench.counters,
            bench.simulated,
            tuple(
                m
                for m in bench.measures
                if m.builtin not in model.COUNTERS and m.builtin not in model.SIMULATED
            ),
        )

    async def attempt(self, session: HostSession, trial: Command, setup: TrialSetup) -> Attempt:
        env, cwd, timeout = trial.env, trial.cwd, trial.timeout
        for hook in setup.hooks_before:
            execution = await self.halting.exec(session, Command(hook, env, cwd, timeout))
            if not execution.ok:
                return (
                    "failed",
                    describe_failure(execution, "before hook") + stderr_line(execution),
                    execution,
                    {},
                    {},
                )
        execution = await self.halting.exec(session, trial)
        measures = {k: float(v) for k, v in execution.rusage.items()}
        note = None  # counters perf could not count and no metric needs (run.counters)
        if setup.counters:
            execution, measures, missing = read_counters(execution, setup.counters)
            uncounted, note = counter_outcome(missing, self.state.experiment)
            if uncounted is not None and execution.ok:
                return "failed", f"measure: {uncounted}", execution, measures, {}
        if setup.simulated:
            execution, measures, unread, note = read_simulated(execution, setup.simulated)
            if unread is not None and execution.ok:
                return "failed", f"measure: {unread}", execution, measures, {}
        if not execution.ok:
            return "failed", describe_failure(execution, "the command"), execution, measures, {}
        series_values: dict[str, np.ndarray] = {}
        try:
            for measure in setup.reads:  # counters and simulated are read with the execution
                value = await self.read_measure(session, measure, execution, cwd)
                if isinstance(value, np.ndarray):
                    series_values[measure.name] = value
                else:
                    measures[measure.name] = value
        except MeasureError as err:
            return "failed", f"measure: {err}", execution, measures, series_values
        for hook in setup.hooks_after:
            after = await self.halting.exec(session, Command(hook, env, cwd, timeout))
            if not after.ok:
                return (
                    "failed",
                    describe_failure(after, "after hook") + stderr_line(after),
                    execution,
                    measures,
                    series_values,
                )
        return "ok", note, execution, measures, series_values

    async def read_measure(
        self, session: HostSession, measure: model.Measure, execution: Execution, cwd: str | None
    ) -> float | np.ndarray:
        if measure.source == "builtin":
            builtin = measure.builtin
            if builtin is None or builtin not in execution.rusage:
                why = execution.unavailable.get(builtin or "", "the backend does not report it")
                raise MeasureError(f"{measure.name}: {builtin} is not available: {why}")
            return float(execution.rusage[builtin])
        if measure.source in ("stdout", "stderr"):
            stream = measure.source
            kept, size, path = (
                getattr(execution, stream + suffix) for suffix in ("", "_size", "_path")
            )
            return extract_output(measure, kept, size, path, stream)
        path = measure.path
        if path is None:  # the checker gives every file measure its path
            raise MeasureError(f"{measure.name}: no file to read")
        try:
            data = await session.read_file(path, cwd)
        except OSError as err:
            raise MeasureError(
                f"{measure.name}: cannot read {path}: {err.strerror or err}"
            ) from None
        return extract(measure, data.decode(errors="replace"), path)

    def store(
        self,
        record: TrialRecord,
        stop: StopRecord | None = None,
        round_row: tuple[object, ...] | None = None,
    ) -> None:
        self.state.store.record_trial(self.state.plan_hash, record, stop, round_row)
        self.state.finished.add(record.trial)
        self.state.ran += 1
        self.state.failed += record.status != "ok"
        self.state.progress.advance(record.status != "ok")
