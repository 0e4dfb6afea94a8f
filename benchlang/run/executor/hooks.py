"""A host's session and the commands around trials: setup when it opens, teardown when it
closes, the reset or reboot before a round; each in the experiment's environment and workdir.
A failed setup, reset or reboot stops the host (``HostStopped``), never the run."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from benchlang import model
from benchlang.backends.base import Command, Execution, HostDown, HostSession, capabilities_of
from benchlang.plan.configurations import placeholder_values, substitute
from benchlang.run import cachegrind
from benchlang.run.counters import probe_command
from benchlang.run.executor.failures import HostStopped, describe_failure, stderr_line
from benchlang.run.hidden import drop_caches_refusal


class Hooks:
    """Sessions, setup, reset, reboot and teardown (a mixin of ``Executor``)."""

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

    async def _setup(self, session: HostSession) -> None:
        exp = self.experiment
        refusal = await drop_caches_refusal(self.hidden, session, self._exec)
        if refusal is not None:
            raise HostStopped(session.host, refusal)
        both = [b.name for b in exp.benchmarks if b.simulated and b.counters]
        if both:
            raise HostStopped(
                session.host,
                f"benchmark {both[0]} declares perf counters and cachegrind measures: "
                "perf would count valgrind; measure them in two benchmarks",
            )
        counted = [m for b in exp.benchmarks for m in b.counters]
        if counted:
            await self._checked(
                session, Command(probe_command(counted), timeout=60.0), "perf stat (counters)"
            )
        if any(b.simulated for b in exp.benchmarks):
            await self._checked(
                session,
                Command(cachegrind.probe_command(), timeout=120.0),
                "valgrind (sim_instructions, sim_cycles)",
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

    async def _checked(self, session: HostSession, command: Command, what: str) -> Execution:
        execution = await self._exec(session, command)
        if not execution.ok:
            raise HostStopped(
                session.host, describe_failure(execution, what) + stderr_line(execution)
            )
        return execution

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
                        + describe_failure(execution, "reboot")
                        + stderr_line(execution),
                    )
        except HostDown:
            pass  # the connection dropped: the host is going down
        await session.reconnect(self.experiment.timeout or 600.0)

    async def _reset(self, session: HostSession, first_trial: int) -> Execution | None:
        """The spec's reset before the round starting at ``first_trial``: a command, ``reboot``
        or the provider's power action, then a reconnection when it reboots. Returns the
        execution of a reset command that failed (the round is then recorded as failed and the
        host stops), else None."""
        reset = self.experiment.reset
        command = self._reset_command(reset.command, first_trial) if reset.command else "reboot"
        try:
            if reset.power is not None and (reset.power != "reboot" or self._can_power("reboot")):
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
            return None
        return None if execution.ok else execution

    def _can_power(self, action: str) -> bool:
        """The backend declares ``action`` and does it through its provider (``power``)."""
        return action in capabilities_of(self.backend) and hasattr(self.backend, "power")

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

    def _cwd(self, bench: model.Benchmark | None) -> str | None:
        return (bench.workdir if bench and bench.workdir else None) or self.experiment.workdir

    def _env(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = dict(self.experiment.env)
        if self.experiment.design.runtime is not None:
            env["BENCHLANG_RUNTIME"] = f"{self.experiment.design.runtime:g}"
        env.update(extra)
        return env
