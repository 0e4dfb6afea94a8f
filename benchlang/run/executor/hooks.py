"""A host's session and the commands around trials: setup when it opens, teardown when it
closes, the reset or reboot before a round; each in the experiment's environment and workdir.
A failed setup, reset or reboot stops the host (``HostStopped``), never the run."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from benchlang import model
from benchlang.backends.base import (
    Command,
    Execution,
    HostDown,
    HostSession,
    Powered,
    capabilities_of,
)
from benchlang.plan.configurations import placeholder_values, substitute
from benchlang.run import cachegrind
from benchlang.run.counters import probe_command
from benchlang.run.executor.failures import HostStopped, describe_failure, stderr_line
from benchlang.run.executor.halting import Halting
from benchlang.run.executor.state import RunState
from benchlang.run.hidden import drop_caches_refusal


class Hooks:
    """Sessions, setup, reset, reboot and teardown, and the environment, workdir and
    placeholders every command of the experiment gets (a part of ``Executor`` over its
    ``RunState``)."""

    def __init__(self, state: RunState, halting: Halting) -> None:
        self.state = state
        self.halting = halting

    async def open(self, host: str) -> HostSession:
        """Connect, record the host's facts and run setup; any failure stops the host."""
        try:
            session = await self.state.backend.open(host)
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
            address = self.state.leases.address(host)
            if address is not None:
                facts["address"] = address
            self.state.store.record_host(self.state.plan_hash, host, facts)
            await self.setup(session)
        except BaseException:
            await self.close(session)
            raise
        return session

    async def close(self, session: HostSession) -> None:
        """Run the teardown (not when the run is halting) and close the session."""
        try:
            if self.state.experiment.teardown and not self.state.halting:
                with contextlib.suppress(HostDown, OSError):
                    await self.halting.exec(
                        session,
                        Command(
                            self.experiment_command(self.state.experiment.teardown),
                            self.env({}),
                            self.cwd(None),
                            self.state.experiment.timeout,
                        ),
                    )
        finally:
            with contextlib.suppress(HostDown, OSError):
                await session.close()

    async def setup(self, session: HostSession) -> None:
        exp = self.state.experiment
        refusal = await drop_caches_refusal(self.state.hidden, session, self.halting.exec)
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
            await self.checked(
                session, Command(probe_command(counted), timeout=60.0), "perf stat (counters)"
            )
        if any(b.simulated for b in exp.benchmarks):
            await self.checked(
                session,
                Command(cachegrind.probe_command(), timeout=120.0),
                "valgrind (sim_instructions, sim_cycles)",
            )
        if exp.setup:
            await self.checked(
                session,
                Command(
                    self.experiment_command(exp.setup), self.env({}), self.cwd(None), exp.timeout
                ),
                "setup",
            )
        for bench in exp.benchmarks:
            if not bench.setup:
                continue
            commands = dict.fromkeys(
                substitute(bench.setup, self.values(c.levels))
                for c in self.state.plan.configurations
                if c.benchmark == bench.name
            )
            for command in commands:
                await self.checked(
                    session,
                    Command(command, self.env({}), self.cwd(bench), bench.timeout or exp.timeout),
                    f"setup of benchmark {bench.name}",
                )

    async def checked(self, session: HostSession, command: Command, what: str) -> Execution:
        execution = await self.halting.exec(session, command)
        if not execution.ok:
            raise HostStopped(
                session.host, describe_failure(execution, what) + stderr_line(execution)
            )
        return execution

    async def reboot(self, session: HostSession, r: int) -> None:
        """Reboot the host before round ``r`` (the hidden factor ``reboot`` drew it): through
        the provider when it can, else ``reboot`` on the host; then reconnect. A reboot
        command that fails stops the host: its trials must not be stored as rebooted."""
        try:
            if self.can_power("reboot"):
                self.halting.check()
                await self.power(session.host, "reboot")
            else:
                execution = await self.halting.exec(
                    session,
                    Command(
                        "reboot",
                        self.env({"BENCHLANG_HOST": session.host}),
                        self.cwd(None),
                        self.state.experiment.timeout,
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
        await session.reconnect(self.state.experiment.timeout or 600.0)

    async def reset(self, session: HostSession, first_trial: int) -> Execution | None:
        """The spec's reset before the round starting at ``first_trial``: a command, ``reboot``
        or the provider's power action, then a reconnection when it reboots. Returns the
        execution of a reset command that failed (the round is then recorded as failed and the
        host stops), else None."""
        reset = self.state.experiment.reset
        if reset is None:
            return None
        command = self.reset_command(reset.command, first_trial) if reset.command else "reboot"
        try:
            if reset.power is not None and (reset.power != "reboot" or self.can_power("reboot")):
                self.halting.check()  # the provider reboots, power-cycles or reimages
                await self.power(session.host, reset.power)
            else:
                execution = await self.halting.exec(
                    session,
                    Command(
                        command,
                        self.env({"BENCHLANG_HOST": session.host}),
                        self.cwd(None),
                        self.state.experiment.timeout,
                    ),
                )
        except HostDown:
            if not (reset.reboot or reset.reconnect):
                raise
        if reset.reboot or reset.reconnect:
            await session.reconnect(self.state.experiment.timeout or 600.0)
            return None
        return None if execution.ok else execution

    def can_power(self, action: str) -> bool:
        """The backend declares ``action`` and does it through its provider (``power``)."""
        backend = self.state.backend
        return action in capabilities_of(backend) and isinstance(backend, Powered)

    async def power(self, host: str, action: str) -> None:
        """``action`` done by the provider; the checker refused a spec whose backend lacks it."""
        backend = self.state.backend
        if not isinstance(backend, Powered):
            raise HostStopped(host, f"backend {backend.kind} cannot {action} a host")
        await backend.power(host, action)

    def experiment_command(self, template: str) -> str:
        """An experiment-level command with {runtime} filled in and {{ }} unescaped."""
        return substitute(template, self.values(()))

    def reset_command(self, template: str, first_trial: int) -> str:
        """The reset before a round; in a layout a round is one version's host batch, so the
        reset may start that version (``{version}``)."""
        config = self.state.plan.configurations[
            int(self.state.plan.trial_configuration[first_trial])
        ]
        version = (
            tuple((k, v) for k, v in config.levels if k == model.VERSION_FACTOR)
            if self.state.plan.layout
            else ()
        )
        return substitute(template, self.values(version))

    def values(self, levels: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
        return placeholder_values(self.state.experiment, levels)

    def cwd(self, bench: model.Benchmark | None) -> str | None:
        return (bench.workdir if bench and bench.workdir else None) or self.state.experiment.workdir

    def env(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = dict(self.state.experiment.env)
        if self.state.experiment.design.runtime is not None:
            env["BENCHLANG_RUNTIME"] = f"{self.state.experiment.design.runtime:g}"
        env.update(extra)
        return env
