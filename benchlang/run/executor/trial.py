"""A trial's life: its command built from the configuration and the hidden factors, its hooks,
the command run, its measures read, retried when the connection drops (at most ``retries``
times, with exponential backoff), and committed to the store before the next one starts."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from benchlang import model
from benchlang.backends.base import Command, Execution, HostDown, HostSession
from benchlang.backends.limits import applicable_limits
from benchlang.lang.shell import parse_template, text_of
from benchlang.plan.configurations import substitute
from benchlang.run.cachegrind import cachegrind_command, read_simulated
from benchlang.run.counters import counter_outcome, perf_command, read_counters
from benchlang.run.executor.failures import describe_failure, stderr_line
from benchlang.run.hidden import aslr_of, drop_caches_command, hidden_environment
from benchlang.run.measures import MeasureError, extract, extract_output
from benchlang.run.store import StopRecord, TrialRecord


class TrialLife:
    """One trial, from its command to its committed record (a mixin of ``Executor``)."""

    async def _trial(
        self, session: HostSession, t: int, series: int, r: int, order_kind: str
    ) -> TrialRecord:
        plan = self.plan
        config = plan.configurations[int(plan.trial_configuration[t])]
        drawn = plan.plan_levels(t)
        key = (config.index, session.host)
        setup = None if drawn else self._command_kept.get(key)
        if setup is None:
            setup = self._command_parts(config, session.host, drawn)
            if not drawn:
                self._command_kept[key] = setup
        command, template, cwd, timeout, hooks_before, hooks_after, aslr, limits, bench = setup
        env = dict(template)
        env["BENCHLANG_TRIAL"] = str(t)
        env["BENCHLANG_SEED"] = str(int(plan.trial_seed[t]))
        attempts = 0
        while True:
            attempts += 1
            try:
                status, reason, execution, measures, series_values = await self._attempt(
                    session,
                    Command(command, env, cwd, timeout, aslr=aslr, limits=limits),
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

    def _command_parts(self, config: Any, host: str, drawn: dict[str, Any]) -> tuple:
        """What a trial's command is made of but its number and seed: kept per configuration
        and host when the plan draws no level for the trial (``_trial``), built per trial
        otherwise. ``BENCHLANG_TRIAL`` and ``BENCHLANG_SEED`` hold their places in the
        environment's order with empty values."""
        bench = self.benchmarks[config.benchmark]
        values = self._values(config.levels)
        values.update((k, v) for k, v in drawn.items() if k in self.hidden)
        bench_env = {
            k: v.format_map({k2: text_of(v2) for k2, v2 in values.items()}) for k, v in bench.env
        }
        template = self._env(
            {
                **bench_env,
                **hidden_environment(self.hidden, drawn),
                "BENCHLANG_TRIAL": "",
                "BENCHLANG_SEED": "",
                "BENCHLANG_CONFIGURATION": config.label,
                "BENCHLANG_HOST": host,
                **({"BENCHLANG_RUNTIME": f"{values['runtime']:g}"} if "runtime" in values else {}),
            }
        )
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
        if bench.simulated:
            command = cachegrind_command(command)
        if bench.counters:
            command = perf_command(command, bench.counters)
        hooks_after = [h for h in (bench.after and substitute(bench.after, values), exp_after) if h]
        limits = applicable_limits(self.experiment.machine, self.backend)
        return (
            command,
            template,
            self._cwd(bench),
            bench.timeout or self.experiment.timeout,
            hooks_before,
            hooks_after,
            aslr_of(self.hidden, drawn),
            limits,
            bench,
        )

    async def _attempt(self, session, trial: Command, hooks_before, hooks_after, bench):
        env, cwd, timeout = trial.env, trial.cwd, trial.timeout
        for hook in hooks_before:
            execution = await self._exec(session, Command(hook, env, cwd, timeout))
            if not execution.ok:
                return (
                    "failed",
                    describe_failure(execution, "before hook") + stderr_line(execution),
                    execution,
                    {},
                    {},
                )
        execution = await self._exec(session, trial)
        measures = {k: float(v) for k, v in execution.rusage.items()}
        note = None  # counters perf could not count and no metric needs (run.counters)
        if bench.counters:
            execution, measures, missing = read_counters(execution, bench.counters)
            uncounted, note = counter_outcome(missing, self.experiment)
            if uncounted is not None and execution.ok:
                return "failed", f"measure: {uncounted}", execution, measures, {}
        if bench.simulated:
            execution, measures, unread, note = read_simulated(execution, bench.simulated)
            if unread is not None and execution.ok:
                return "failed", f"measure: {unread}", execution, measures, {}
        if not execution.ok:
            return "failed", describe_failure(execution, "the command"), execution, measures, {}
        series_values: dict[str, np.ndarray] = {}
        try:
            for measure in bench.measures:
                if measure.builtin in model.COUNTERS or measure.builtin in model.SIMULATED:
                    continue  # read with the execution (run.counters, run.cachegrind)
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
                    describe_failure(after, "after hook") + stderr_line(after),
                    execution,
                    measures,
                    series_values,
                )
        return "ok", note, execution, measures, series_values

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

    def _store_trial(
        self, record: TrialRecord, stop: StopRecord | None = None, round_row: tuple | None = None
    ) -> None:
        self.store.record_trial(self.plan_hash, record, stop, round_row)
        self.finished.add(record.trial)
        self.ran += 1
        self.failed += record.status != "ok"
        self.progress.advance(record.status != "ok")
