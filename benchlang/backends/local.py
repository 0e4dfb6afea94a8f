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
import os
import select
import shlex
import shutil
import signal
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

from benchlang import __version__
from benchlang.backends.base import (
    Command,
    Execution,
    FixedHosts,
    SettingError,
    check_facts_setting,
    read_declared_facts,
)
from benchlang.backends.launcher import TrialCgroup, kill_group, launcher, scratch_dir
from benchlang.backends.resident import (
    NO_OUTPUT,
    LauncherPool,
    Output,
    ResidentLauncher,
    encode_request,
    environment_block,
    high_fd,
    parse_report,
    report_measures,
    tail,
)
from benchlang.backends.resident import OUTPUT_KEEP as OUTPUT_KEEP  # where readers look

_SHELL_SYNTAX = set("|&;<>()$`\\*?[]#~\n!{}=%")
_OUTPUT_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


def argv_for(text: str) -> list[str]:
    """Direct argv when the command has no shell syntax, else ``/bin/sh -c``."""
    if not _SHELL_SYNTAX.intersection(text):
        try:
            argv = shlex.split(text)
        except ValueError:
            argv = []
        if argv:
            return argv
    return ["/bin/sh", "-c", text]


def setarch(aslr: bool | None, argv: list[str]) -> list[str]:
    """``argv`` under setarch(8) with randomisation off (``-R``) or as the host has it, when
    a hidden aslr factor asks; both levels pay the same exec (no launcher to set it)."""
    if aslr is None:
        return argv
    return ["setarch", os.uname().machine, *([] if aslr else ["-R"]), *argv]


def host_facts() -> dict[str, str]:
    """Kernel, OS, CPU model and frequency, cores, memory, governor, compilers where readable
    (the SSH agent's reading, so local and remote hosts report the same facts)."""
    from benchlang.backends.ssh_agent import _facts

    return {**_facts(), "benchlang": __version__}


@attrs.define
class _Trial:
    """A running trial: its process (the launcher, or the command in the fallback) and files."""

    pid: int
    out: int
    err: int
    out_path: str
    err_path: str
    started: float
    t0: float
    launcher: ResidentLauncher | None = None


def _not_started(program: str, exc: Exception, started: float, t0: float) -> Execution:
    wall = time.perf_counter() - t0
    reason = getattr(exc, "strerror", None) or exc
    message = f"benchlang: cannot start {program!r}: {reason}\n".encode()
    return Execution(127, False, started, time.time(), wall, b"", message, {"wall_time": wall})


class LocalSession:
    """Runs commands on this machine, one at a time; each trial writes its own scratch files."""

    def __init__(self, host: str = "local", spec_dir: Path | None = None) -> None:
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
        self._previous: tuple[str, str] | None = None
        self._base_block = environment_block(self._base_env)

    # -- the per-trial path ------------------------------------------------------------------

    def _files(self) -> tuple[int, int, str, str]:
        """The trial's own stdout and stderr files; the previous trial's are deleted."""
        if self._previous is not None:
            for path in self._previous:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        self._count += 1
        base = f"{self._scratch}/{self._count}"
        out_path, err_path = base + ".out", base + ".err"
        self._previous = (out_path, err_path)
        out = high_fd(os.open(out_path, _OUTPUT_FLAGS, 0o600))
        err = high_fd(os.open(err_path, _OUTPUT_FLAGS, 0o600))
        return out, err, out_path, err_path

    def _environment(self, extra: Mapping[str, str] | None) -> bytes:
        """The request's environment: this process's (encoded once) and the command's."""
        if not extra:
            return self._base_block
        if self._base_env.keys() & extra.keys():
            return environment_block({**self._base_env, **extra})
        return self._base_block + environment_block(extra)

    def _start(self, command: Command) -> _Trial | Execution:
        argv = argv_for(command.text)
        cwd = str(self.spec_dir / command.cwd) if command.cwd else None
        started = time.time()
        t0 = time.perf_counter()
        if self._launcher.path is not None:
            aslr = "0" if command.aslr is None else "A" if command.aslr else "R"
            try:
                environment = self._environment(command.env)
                request = encode_request(argv, environment, cwd, command.timeout, aslr)
                resident = self._pool.hand_over(request)
            except (OSError, ValueError) as exc:
                return _not_started(argv[0], exc, started, t0)
            return _Trial(resident.pid, -1, -1, "", "", started, t0, resident)
        out, err, out_path, err_path = self._files()
        env = {**self._base_env, **command.env} if command.env else self._base_env
        try:
            pid = self._spawn(argv, env, cwd, command.aslr, out, err)
        except (OSError, ValueError) as exc:
            os.close(out)
            os.close(err)
            return _not_started(argv[0], exc, started, t0)
        return _Trial(pid, out, err, out_path, err_path, started, t0)

    def _spawn(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str | None,
        aslr: bool | None,
        out: int,
        err: int,
    ) -> int:
        """Without the launcher: the command spawned from here (setarch, cd and cgroup entry
        through /bin/sh prologues)."""
        argv = setarch(aslr, argv)
        if cwd:
            argv = ["/bin/sh", "-c", 'cd -- "$0" && exec "$@"', cwd, *argv]
        if self._cgroup is not None:
            procs = str(self._cgroup.path / "cgroup.procs")
            argv = ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', procs, *argv]
        actions = [
            (os.POSIX_SPAWN_DUP2, self._null, 0),
            (os.POSIX_SPAWN_DUP2, out, 1),
            (os.POSIX_SPAWN_DUP2, err, 2),
        ]
        return os.posix_spawnp(argv[0], argv, env, file_actions=actions, setpgroup=0)

    def _reported(self, trial: _Trial, report: bytes) -> Execution:
        """The Execution from the launcher's report; a launcher that ended without one fails
        the trial with the reason (and is replaced at the next trial)."""
        resident = trial.launcher
        assert resident is not None
        fields = parse_report(report)
        failure = None
        output = NO_OUTPUT
        if fields is None:
            files = resident.running()[1]
            why = self._pool.retire(resident)
            output = self._pool.output(resident.pid, files)
            failure = f"the trial's launcher ended ({why}) before it reported the trial"
        elif fields[0] == "files":
            self._pool.idle(resident)
            why = os.strerror(int(fields[1]))
            failure = f"cannot create the trial's output files in {self._scratch}: {why}"
        if failure is not None:
            reasons = dict.fromkeys(_RUSAGE_NAMES, failure)
            rusage = {"wall_time": time.perf_counter() - trial.t0}
            return self._execution(trial, -9, False, rusage, reasons, 0, output, failure)
        if fields[10] == "1":  # cancelled: by us, or by a signal that also ends the launcher
            self._pool.retire(resident, cancelled=True)
        else:
            self._pool.idle(resident)
        code, rusage = int(fields[0]), report_measures(fields)
        try:
            output = self._pool.output(resident.pid, *map(int, fields[12:15]))
        except FileNotFoundError as err:
            failure = f"the trial's output file {err.filename} was deleted while it ran"
            output = NO_OUTPUT
        timed_out, left = fields[9] == "1", int(fields[11])
        return self._execution(trial, code, timed_out, rusage, {}, left, output, failure)

    def _finish(self, trial: _Trial, status: int, usage: Any, timed_out: bool) -> Execution:
        """The fallback's Execution once the command is reaped and nothing of it is left."""
        rusage = {
            "wall_time": time.perf_counter() - trial.t0,
            "user_time": usage.ru_utime,
            "sys_time": usage.ru_stime,
            "cpu_time": usage.ru_utime + usage.ru_stime,
            "minor_faults": float(usage.ru_minflt),
            "major_faults": float(usage.ru_majflt),
        }
        why = (
            "max_rss needs benchlang's C launcher (a child spawned from Python reports "
            f"Python's resident size): {self._launcher.reason}"
        )
        exit_status = os.waitstatus_to_exitcode(status)
        stdout, out_size = tail(trial.out)
        stderr, err_size = tail(trial.err)
        os.close(trial.out)
        os.close(trial.err)
        output = (stdout, out_size, trial.out_path, stderr, err_size, trial.err_path)
        return self._execution(trial, exit_status, timed_out, rusage, {"max_rss": why}, 0, output)

    def _execution(
        self,
        trial: _Trial,
        exit_status: int,
        timed_out: bool,
        rusage: dict[str, float],
        unavailable: dict[str, str],
        left: int,
        output: Output,
        failure: str | None = None,
    ) -> Execution:
        elapsed = time.perf_counter() - trial.t0
        stdout, out_size, out_path, stderr, err_size, err_path = output
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

    def _kill(self, trial: _Trial) -> None:
        """Kill a trial from here: the fallback's timeout, or a cancelled execute."""
        if trial.launcher is not None:
            # The launcher kills and reaps the trial when told; killed itself if it does not.
            self._pool.retire(trial.launcher, cancelled=bool(trial.launcher.cancel()))
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(trial.pid, signal.SIGKILL)
        os.waitpid(trial.pid, 0)
        kill_group(trial.pid)
        if self._cgroup is not None:
            self._cgroup.kill()

    def _after_exit(self, trial: _Trial) -> None:
        """The fallback's clean-up once the command exited: its group and its cgroup."""
        kill_group(trial.pid)
        if self._cgroup is not None and self._cgroup.populated():
            self._cgroup.kill()

    def run_blocking(self, command: Command) -> Execution:
        """Run a command and wait for it in this thread (for worker threads and tools)."""
        trial = self._start(command)
        if isinstance(trial, Execution):
            return trial
        if trial.launcher is not None:
            return self._reported(trial, trial.launcher.wait_report(None) or b"")
        timed_out = False
        if command.timeout is not None and not _exits_within(trial.pid, command.timeout):
            timed_out = True
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(trial.pid, signal.SIGKILL)
        _, status, usage = os.wait4(trial.pid, 0)
        self._after_exit(trial)
        return self._finish(trial, status, usage, timed_out)

    async def execute(self, command: Command) -> Execution:
        trial = self._start(command)
        if isinstance(trial, Execution):
            return trial
        report, exited = b"", False
        try:
            if trial.launcher is not None:
                report = await trial.launcher.report()
            else:
                exited = await _wait_exit(trial.pid, command.timeout)
        except BaseException:
            self._kill(trial)
            if trial.launcher is None:
                os.close(trial.out)
                os.close(trial.err)
            raise
        if trial.launcher is not None:
            return self._reported(trial, report)
        if not exited:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(trial.pid, signal.SIGKILL)
        _, status, usage = os.wait4(trial.pid, 0)
        self._after_exit(trial)
        return self._finish(trial, status, usage, not exited)

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
        return facts

    async def reconnect(self, timeout: float) -> None:
        raise SettingError("reset", "the local backend cannot reboot this machine")

    async def close(self) -> None:
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


def _exits_within(pid: int, seconds: float) -> bool:
    """Wait on a pidfd (man 2 pidfd_open) without reaping: True when the process ended."""
    pidfd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(seconds * 1000.0))
    finally:
        os.close(pidfd)


async def _wait_exit(pid: int, timeout: float | None) -> bool:
    """Await a process's exit through its pidfd on the event loop (so it can be cancelled);
    False on timeout. The process is not reaped."""
    loop = asyncio.get_running_loop()
    pidfd = os.pidfd_open(pid)
    done = loop.create_future()

    def ready() -> None:
        if not done.done():
            done.set_result(True)

    loop.add_reader(pidfd, ready)
    try:
        if timeout is None:
            return await done
        try:
            return await asyncio.wait_for(done, max(0.0, timeout))
        except TimeoutError:
            return False
    finally:
        loop.remove_reader(pidfd)
        os.close(pidfd)


class LocalBackend(FixedHosts):
    """``hosts local``: this machine, one trial at a time; ``hosts local { slots N }``: N worker
    slots named ``local:0`` ... ``local:N-1`` that run trials at the same time (the "hosts" of an
    A/B layout on one machine; give no more slots than cores you can spare)."""

    kind: ClassVar[str] = "local"
    supports_reboot: ClassVar[bool] = False
    capabilities: ClassVar[frozenset[str]] = frozenset({"aslr"})
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
        self.declared = dict(declared or {})
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
