"""The local backend: each trial a subprocess in its own process group on this machine.

Overhead is kept to one posix_spawn: commands without shell syntax are executed directly
(as ``hyperfine -N`` does), a timeout is awaited on a pidfd, and ``wait4`` returns the
child's resource usage, from which the built-in measures come.

max_rss caveat: Linux records the resident high-water mark of the address space a child
leaves at exec; a spawned child leaves its parent's, so max_rss has a floor of the
launcher's resident size (tens of MiB for a Python launcher). Compare max_rss across
configurations of one experiment, not against figures taken with another launcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import select
import shlex
import signal
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from benchlang import __version__
from benchlang.backends.base import Command, Execution, SettingError

_SHELL_SYNTAX = set("|&;<>()$`\\*?[]#~\n!{}=%")
OUTPUT_LIMIT = 64 * 1024 * 1024


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


def host_facts() -> dict[str, str]:
    """Kernel, CPU model, cores, memory, frequency governor where readable."""
    facts = {
        "hostname": platform.node(),
        "kernel": f"{platform.system()} {platform.release()}",
        "machine": platform.machine(),
        "cores": str(os.cpu_count() or ""),
        "python": platform.python_version(),
        "benchlang": __version__,
    }
    readers = {
        "cpu_model": ("/proc/cpuinfo", "model name"),
        "memory": ("/proc/meminfo", "MemTotal"),
    }
    for key, (path, field) in readers.items():
        try:
            for line in Path(path).read_text().splitlines():
                if line.startswith(field):
                    facts[key] = line.split(":", 1)[1].strip()
                    break
        except OSError:
            pass
    with contextlib.suppress(OSError):
        facts["governor"] = (
            Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
        )
    return facts


def _read(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    os.lseek(fd, max(0, size - OUTPUT_LIMIT), os.SEEK_SET)
    return os.read(fd, OUTPUT_LIMIT) if size else b""


class LocalSession:
    """Runs commands on this machine; two scratch files receive stdout and stderr."""

    def __init__(self, host: str = "local", spec_dir: Path | None = None) -> None:
        self.host = host
        self.spec_dir = spec_dir or Path.cwd()
        self._out = tempfile.TemporaryFile(prefix="benchlang-out-")  # noqa: SIM115 (kept open for the session)
        self._err = tempfile.TemporaryFile(prefix="benchlang-err-")  # noqa: SIM115 (kept open for the session)
        self._base_env = dict(os.environ)
        self._null = os.open(os.devnull, os.O_RDONLY)

    def run_blocking(self, command: Command) -> Execution:
        out, err = self._out.fileno(), self._err.fileno()
        for fd in (out, err):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        env = self._base_env
        if command.env:
            env = {**env, **command.env}
        argv = argv_for(command.text)
        if command.cwd:
            cwd = str(self.spec_dir / command.cwd)
            argv = ["/bin/sh", "-c", f'cd -- {shlex.quote(cwd)} && exec "$@"', "sh", *argv]
        actions = [
            (os.POSIX_SPAWN_DUP2, self._null, 0),
            (os.POSIX_SPAWN_DUP2, out, 1),
            (os.POSIX_SPAWN_DUP2, err, 2),
        ]
        started = time.time()
        t0 = time.perf_counter()
        try:
            pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions, setpgroup=0)
        except (OSError, ValueError) as exc:
            t1 = time.perf_counter()
            message = f"benchlang: cannot start {argv[0]!r}: {getattr(exc, 'strerror', None) or exc}\n".encode()
            return Execution(
                127, False, started, time.time(), t1 - t0, b"", message, {"wall_time": t1 - t0}
            )
        timed_out = False
        if command.timeout is not None:
            pidfd = os.pidfd_open(pid)
            try:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                if not poller.poll(max(0.0, command.timeout) * 1000.0):
                    timed_out = True
                    self._kill_group(pid)
            finally:
                os.close(pidfd)
        _, status, usage = os.wait4(pid, 0)
        t1 = time.perf_counter()
        if timed_out:
            self._kill_group(pid)
        rusage = {
            "wall_time": t1 - t0,
            "user_time": usage.ru_utime,
            "sys_time": usage.ru_stime,
            "cpu_time": usage.ru_utime + usage.ru_stime,
            "max_rss": float(usage.ru_maxrss),
            "minor_faults": float(usage.ru_minflt),
            "major_faults": float(usage.ru_majflt),
        }
        return Execution(
            exit_status=os.waitstatus_to_exitcode(status),
            timed_out=timed_out,
            started=started,
            ended=started + (t1 - t0),
            wall_time=t1 - t0,
            stdout=_read(out),
            stderr=_read(err),
            rusage=rusage,
        )

    @staticmethod
    def _kill_group(pgid: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)

    async def execute(self, command: Command) -> Execution:
        return self.run_blocking(command)

    async def read_file(self, path: str, cwd: str | None = None) -> bytes:
        full = (self.spec_dir / cwd if cwd else Path.cwd()) / path
        return await asyncio.to_thread(full.read_bytes)

    async def facts(self) -> dict[str, str]:
        return host_facts()

    async def reconnect(self, timeout: float) -> None:
        raise SettingError("reset", "the local backend cannot reboot this machine")

    async def close(self) -> None:
        os.close(self._null)
        self._out.close()
        self._err.close()


class LocalBackend:
    """``hosts local``: this machine, one trial at a time; ``hosts local { slots N }``: N worker
    slots named ``local:0`` ... ``local:N-1`` that run trials at the same time (the "hosts" of an
    A/B layout on one machine; give no more slots than cores you can spare)."""

    kind: ClassVar[str] = "local"
    supports_reboot: ClassVar[bool] = False
    MAX_SLOTS: ClassVar[int] = 256

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key, value in settings.items():
            if key != "slots":
                raise SettingError(
                    key, f"hosts local takes only 'slots', got '{key}'", "hosts local { slots 4 }"
                )
            if type(value) is not int or not 1 <= value <= cls.MAX_SLOTS:
                raise SettingError(
                    key, f"slots must be a whole number from 1 to {cls.MAX_SLOTS}, got {value!r}"
                )

    def __init__(self, spec_dir: Path | None = None, slots: int = 1) -> None:
        self.spec_dir = spec_dir
        self.slots = slots

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> LocalBackend:
        cls.check_settings(settings)
        return cls(spec_dir, settings.get("slots", 1))

    def hosts(self) -> tuple[str, ...]:
        if self.slots == 1:
            return ("local",)
        return tuple(f"local:{i}" for i in range(self.slots))

    async def open(self, host: str) -> LocalSession:
        if self.slots == 1:
            return LocalSession(host, self.spec_dir)
        return ThreadedLocalSession(host, self.spec_dir)


class ThreadedLocalSession(LocalSession):
    """A worker slot: waits for its trial in a thread, so that slots run side by side."""

    async def execute(self, command: Command) -> Execution:
        return await asyncio.to_thread(self.run_blocking, command)
