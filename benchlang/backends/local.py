"""The local backend: each trial in its own process group (and cgroup v2 where writable) on
this machine, measured by a small C launcher so that its measures describe the command alone.

Per trial (docs/measures.md): benchlang hands the command to the session's launcher
(launcher.c, started on the session's first trial and kept, backends/resident.py); the
launcher forks the command into a new process group and the session's cgroup, waits for it
with ``wait4`` (its rusage and wall time), enforces the timeout, then kills and reaps whatever
the command left running (group, cgroup, and every re-parented descendant: it is a child
subreaper) before it reports. stdout and stderr go to files of their own for each trial; the
Execution keeps their last ``OUTPUT_KEEP`` bytes and points at the full files. Waiting is on
the launcher's socket, registered with the event loop, so ``execute`` can be cancelled: the
launcher is then told to kill the trial, and the cgroup is emptied. A launcher that dies fails
its trial with the reason (``Execution.failure``); the next trial starts a new one.

Without a C compiler, commands are spawned directly (process group, cgroup through a
``/bin/sh`` prologue), and ``max_rss`` is unavailable with the reason: a child spawned from
this Python process inherits its resident size as the floor of ``ru_maxrss``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shlex
import shutil
import signal
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from benchlang import __version__
from benchlang.backends.agent_host import limit_facts
from benchlang.backends.base import (
    Command,
    Execution,
    FixedHosts,
    SettingError,
    check_facts_setting,
    read_declared_facts,
)
from benchlang.backends.launcher import TrialCgroup, kill_group, launcher, scratch_dir
from benchlang.backends.limits import (
    CPU_EXCEEDED,
    concluded,
    exits_within,
    limits_request,
    trial_limits,
    wait_exit,
)
from benchlang.backends.resident import (
    NO_OUTPUT,
    LauncherPool,
    Output,
    encode_request,
    environment_block,
    high_fd,
    parse_report,
    report_measures,
)
from benchlang.backends.resident import OUTPUT_KEEP as OUTPUT_KEEP  # where readers look
from benchlang.backends.spawned import Spawned, Trial

_SHELL_SYNTAX = set("|&;<>()$`\\*?[]#~\n!{}=%")


def argv_for(text: str) -> list[str]:
    """Direct argv when the command has no shell syntax, else ``/bin/sh -c``."""
    return list(_argv(text))


@functools.lru_cache(maxsize=256)
def _argv(text: str) -> tuple[str, ...]:
    """``argv_for``, split once per command text: a run repeats its few commands."""
    if not _SHELL_SYNTAX.intersection(text):
        try:
            argv = shlex.split(text)
        except ValueError:
            argv = []
        if argv:
            return tuple(argv)
    return ("/bin/sh", "-c", text)


def host_facts() -> dict[str, str]:
    """Kernel, OS, CPU model and frequency, cores, memory, governor, compilers where readable
    (the SSH agent's reading, so local and remote hosts report the same facts)."""
    from benchlang.backends.agent_host import _facts

    return {**_facts(), "benchlang": __version__}


def _not_started(program: str, exc: Exception, started: float, t0: float) -> Execution:
    wall = time.perf_counter() - t0
    reason = getattr(exc, "strerror", None) or exc
    message = f"benchlang: cannot start {program!r}: {reason}\n".encode()
    return Execution(127, False, started, time.time(), wall, b"", message, {"wall_time": wall})


def _not_limited(reason: str, started: float) -> Execution:
    """A trial whose limits cannot be enforced here: it fails with the reason, unrun."""
    return Execution(
        126, False, started, time.time(), 0.0, b"", b"", {"wall_time": 0.0}, failure=reason
    )


DIRECT_WAIT = 0.01
"""Seconds ``execute`` waits for its launcher's report in this thread, before it waits on the
event loop, when its session is the only one open (``_alone``)."""


class LocalSession(Spawned):
    """Runs commands on this machine, one at a time; each trial writes its own scratch files."""

    _open: ClassVar[weakref.WeakSet[LocalSession]] = weakref.WeakSet()

    def __init__(self, host: str = "local", spec_dir: Path | None = None) -> None:
        LocalSession._open.add(self)
        self.host = host
        self.spec_dir = spec_dir or Path.cwd()
        self.declared: dict[str, str] = {}
        self._base_env = dict(os.environ)
        self._launcher = launcher()
        cgroup = TrialCgroup.create()
        self._cgroup = cgroup if isinstance(cgroup, TrialCgroup) else None
        self._cgroup_reason = cgroup if isinstance(cgroup, str) else ""
        self._scratch = scratch_dir()
        self._null = high_fd(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        self._pool: LauncherPool | None = None
        if self._launcher.path is not None:
            self._pool = LauncherPool(self._launcher.path, self._scratch, self._cgroup)
        self._count = 0
        self._previous = None
        self._base_block = environment_block(self._base_env)
        self._cwds: dict[str, str] = {}

    # -- the per-trial path ------------------------------------------------------------------

    def _environment(self, extra: Mapping[str, str] | None) -> bytes:
        """The request's environment: this process's (encoded once) and the command's."""
        if not extra:
            return self._base_block
        base = self._base_env
        if any(key in base for key in extra):
            return environment_block({**base, **extra})
        return self._base_block + environment_block(extra)

    def _cwd(self, cwd: str) -> str:
        """A command's working directory, under the spec's directory (joined once a session)."""
        joined = self._cwds.get(cwd)
        if joined is None:
            joined = self._cwds[cwd] = str(self.spec_dir / cwd)
        return joined

    def _start(self, command: Command) -> Trial | Execution:
        argv = _argv(command.text)
        cwd = self._cwd(command.cwd) if command.cwd else None
        started = time.time()
        request = limits_request(command.limits)
        limits = trial_limits(request)
        if isinstance(limits, str):
            return _not_limited(limits, started)
        t0 = time.perf_counter()
        pool = self._pool  # made exactly when the launcher was built
        if pool is not None:
            aslr = "0" if command.aslr is None else "A" if command.aslr else "R"
            field = limits.launcher_field() if limits is not None else ""
            try:
                environment = self._environment(command.env)
                message = encode_request(argv, environment, cwd, command.timeout, aslr, field)
                resident = pool.hand_over(message)
            except (OSError, ValueError) as exc:
                if limits is not None:
                    limits.remove()
                return _not_started(argv[0], exc, started, t0)
            return Trial(resident.pid, -1, -1, "", "", started, t0, resident, limits, request)
        out, err, out_path, err_path = self._files()
        env = {**self._base_env, **command.env} if command.env else self._base_env
        try:
            pid = self._spawn(argv, env, cwd, command.aslr, out, err, limits)
        except (OSError, ValueError) as exc:
            os.close(out)
            os.close(err)
            if limits is not None:
                limits.remove()
            return _not_started(argv[0], exc, started, t0)
        return Trial(pid, out, err, out_path, err_path, started, t0, None, limits, request)

    def _reported(self, trial: Trial, report: bytes) -> Execution:
        """The Execution from the launcher's report; a launcher that ended without one fails
        the trial with the reason (and is replaced at the next trial)."""
        resident, pool = trial.launcher, self._pool
        assert resident is not None and pool is not None
        fields = parse_report(report)
        if fields is None:
            files = resident.running()[1]
            why = pool.retire(resident)
            output = pool.output(resident.pid, files)
            return self._unreported(
                trial, output, f"the trial's launcher ended ({why}) before it reported the trial"
            )
        if fields[0] == "files":
            pool.idle(resident)
            why = os.strerror(int(fields[1]))
            return self._unreported(
                trial,
                NO_OUTPUT,
                f"cannot create the trial's output files in {self._scratch}: {why}",
            )
        if fields[10] == "1":  # cancelled: by us, or by a signal that also ends the launcher
            pool.retire(resident, cancelled=True)
        else:
            pool.idle(resident)
        code, rusage = int(fields[0]), report_measures(fields)
        failure: str | None = None
        try:
            output = pool.output(resident.pid, *map(int, fields[12:15]))
        except FileNotFoundError as err:
            failure = f"the trial's output file {err.filename} was deleted while it ran"
            output = NO_OUTPUT
        timed_out, left = fields[9] == "1", int(fields[11])
        cpu_killed = fields[9] == str(CPU_EXCEEDED)
        return self._execution(
            trial, code, timed_out, rusage, {}, left, output, failure, cpu_killed
        )

    def _unreported(self, trial: Trial, output: Output, failure: str) -> Execution:
        """A trial failed before its launcher reported it: every measure unavailable."""
        reasons = dict.fromkeys(_RUSAGE_NAMES, failure)
        rusage = {"wall_time": time.perf_counter() - trial.t0}
        if trial.limits is not None:
            trial.limits.remove()
        return self._execution(trial, -9, False, rusage, reasons, 0, output, failure)

    def _execution(
        self,
        trial: Trial,
        exit_status: int,
        timed_out: bool,
        rusage: dict[str, float],
        unavailable: dict[str, str],
        left: int,
        output: Output,
        failure: str | None = None,
        cpu_killed: bool = False,
    ) -> Execution:
        elapsed = time.perf_counter() - trial.t0
        stdout, out_size, out_path, stderr, err_size, err_path = output
        if trial.limits is not None:
            assert trial.request is not None  # the limits were made from it (trial_limits)
            measured, missing, limited = concluded(
                trial.limits, trial.request, exit_status, cpu_killed
            )
            rusage, unavailable = {**rusage, **measured}, {**unavailable, **missing}
            failure = failure or limited
        return Execution(
            exit_status=exit_status,
            timed_out=timed_out,
            started=trial.started,
            ended=trial.started + elapsed,
            wall_time=rusage["wall_time"],
            stdout=stdout,
            stderr=stderr,
            rusage=rusage,
            stdout_truncated=out_size > len(stdout),
            stderr_truncated=err_size > len(stderr),
            stdout_size=out_size,
            stderr_size=err_size,
            stdout_path=out_path,
            stderr_path=err_path,
            unavailable=unavailable,
            left_running=left,
            failure=failure,
        )

    def _kill(self, trial: Trial) -> None:
        """Kill a trial from here: the fallback's timeout, or a cancelled execute."""
        if trial.launcher is not None:
            # The launcher kills and reaps the trial when told; killed itself if it does not.
            assert self._pool is not None  # a trial has a launcher only from the pool
            self._pool.retire(trial.launcher, cancelled=bool(trial.launcher.cancel()))
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(trial.pid, signal.SIGKILL)
        os.waitpid(trial.pid, 0)
        kill_group(trial.pid)
        if self._cgroup is not None:
            self._cgroup.kill()

    def run_blocking(self, command: Command) -> Execution:
        """Run a command and wait for it in this thread (for worker threads and tools)."""
        trial = self._start(command)
        if isinstance(trial, Execution):
            return trial
        if trial.launcher is not None:
            return self._reported(trial, trial.launcher.wait_report(None) or b"")
        ended = "exited"
        if command.timeout is not None or trial.limits is not None:
            ended = exits_within(trial.pid, command.timeout, trial.limits)
        return self._reap(trial, ended)

    async def execute(self, command: Command) -> Execution:
        trial = self._start(command)
        if isinstance(trial, Execution):
            return trial
        report, ended = b"", "exited"
        try:
            if trial.launcher is not None:
                direct = trial.launcher.report_within(DIRECT_WAIT) if self._alone() else None
                report = direct if direct is not None else await trial.launcher.report()
            else:
                ended = await wait_exit(trial.pid, command.timeout, trial.limits)
        except BaseException:
            self._kill(trial)
            if trial.launcher is None:
                os.close(trial.out)
                os.close(trial.err)
            if trial.limits is not None:
                trial.limits.remove()
            raise
        if trial.launcher is not None:
            return self._reported(trial, report)
        return self._reap(trial, ended)

    def _alone(self) -> bool:
        """Whether this is the only open session (one trial at a time in this process): its
        report is then first awaited in this thread, for at most ``DIRECT_WAIT``, as the event
        loop has no other trial to serve. A trial of `true` ends within it, and two hops of the
        loop (the reader's callback, then the task's wake-up) and the registration of the
        reader are saved (benchmarks/bench_runner.py); a longer one then waits on the loop,
        cancellable. A signal's handler runs meanwhile (the CLI's kills the trial: halting.py);
        a cancellation is seen at most ``DIRECT_WAIT`` later. With slots (several sessions)
        every report is awaited on the loop, so that no slot holds up another."""
        return len(LocalSession._open) == 1

    # -- the rest of the protocol ------------------------------------------------------------

    async def read_file(self, path: str, cwd: str | None = None) -> bytes:
        full = (self.spec_dir / cwd if cwd else Path.cwd()) / path
        return await asyncio.to_thread(full.read_bytes)

    async def facts(self) -> dict[str, str]:
        facts = {**host_facts(), **self.declared}
        if self._cgroup is not None:
            facts["isolation"] = "cgroup"
            facts["isolation_detail"] = f"process group + cgroup v2 {self._cgroup.path}"
        else:
            facts["isolation"] = "pgroup"
            facts["isolation_detail"] = f"process group only: {self._cgroup_reason}"
        facts["launcher"] = self._launcher.path or f"none ({self._launcher.reason})"
        facts.update(limit_facts())
        return facts

    async def reconnect(self, timeout: float) -> None:
        raise SettingError("reset", "the local backend cannot reboot this machine")

    async def close(self) -> None:
        LocalSession._open.discard(self)
        if self._null < 0:
            return
        if self._pool is not None:
            self._pool.close()
        os.close(self._null)
        self._null = -1
        if self._cgroup is not None:
            self._cgroup.close()
        shutil.rmtree(self._scratch, ignore_errors=True)


_RUSAGE_NAMES = ("user_time", "sys_time", "cpu_time", "max_rss", "minor_faults", "major_faults")


class LocalBackend(FixedHosts):
    """``hosts local``: this machine, one trial at a time; ``hosts local { slots N }``: N worker
    slots named ``local:0`` ... ``local:N-1`` that run trials at the same time (the "hosts" of an
    A/B layout on one machine; give no more slots than cores you can spare)."""

    kind: ClassVar[str] = "local"
    supports_reboot: ClassVar[bool] = False
    capabilities: ClassVar[frozenset[str]] = frozenset({"aslr", "pin", "memory", "cpu_time"})
    MAX_SLOTS: ClassVar[int] = 256

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key, value in settings.items():
            if key == "facts":
                check_facts_setting(value)
                continue
            if key != "slots":
                raise SettingError(
                    key,
                    f"hosts local takes 'slots' and 'facts', got '{key}'",
                    "hosts local { slots 4 }",
                )
            if type(value) is not int or not 1 <= value <= cls.MAX_SLOTS:
                raise SettingError(
                    key, f"slots must be a whole number from 1 to {cls.MAX_SLOTS}, got {value!r}"
                )

    def __init__(
        self,
        spec_dir: Path | None = None,
        slots: int = 1,
        declared: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        self.spec_dir = spec_dir
        self.slots = slots
        self.declared: Mapping[str, Mapping[str, str]] = dict(declared or {})
        """Facts given in ``facts from file``, per host, over the ones read here."""

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> LocalBackend:
        cls.check_settings(settings)
        backend = cls(spec_dir, settings.get("slots", 1))
        if "facts" in settings:
            backend.declared = read_declared_facts(Path(settings["facts"]["file"]), backend.hosts())
        return backend

    async def inventory(self) -> dict[str, dict[str, str]]:
        """Every slot's facts without opening a session (hardware factors at plan time)."""
        facts = host_facts()
        return {h: {**facts, **self.declared.get(h, {})} for h in self.hosts()}

    def hosts(self) -> tuple[str, ...]:
        if self.slots == 1:
            return ("local",)
        return tuple(f"local:{i}" for i in range(self.slots))

    async def open(self, host: str) -> LocalSession:
        session = (ThreadedLocalSession if self.slots > 1 else LocalSession)(host, self.spec_dir)
        session.declared = dict(self.declared.get(host, {}))
        return session


class ThreadedLocalSession(LocalSession):
    """A worker slot. ``LocalSession.execute`` awaits its trial on the event loop, so slots
    already run side by side; the class stays for code that names it."""
