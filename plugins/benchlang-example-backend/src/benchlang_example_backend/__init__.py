"""``hosts pinned { cpus [2, 3]  nice 0 }``: this machine, one host per listed CPU core.

Every trial of host ``cpuN`` runs under ``taskset -c N`` (and ``nice -n K`` when ``nice`` is
set), so rounds assigned to different cores run side by side, each on a core of its own. The
session reuses benchlang's local session for spawning, timeouts and rusage, in a worker thread
so that the cores' hosts really run at the same time; all this backend adds is the pinning.
It is the worked example of docs/plugins.md.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from benchlang.backends.base import Command, Execution, FixedHosts, SettingError
from benchlang.backends.local import LocalSession, argv_for

__all__ = ["PinnedBackend", "PinnedSession"]


class PinnedSession:
    """Runs each command of one host pinned to its core."""

    def __init__(self, host: str, cpu: int, nice: int, spec_dir: Path | None) -> None:
        self.host = host
        self.cpu = cpu
        self.nice = nice
        self._local = LocalSession(host, spec_dir)

    def wrap(self, text: str) -> str:
        """The command line that runs ``text`` on this host's core."""
        argv = argv_for(text)
        prefix = [
            "taskset",
            "-c",
            str(self.cpu),
            *(["nice", "-n", str(self.nice)] if self.nice else []),
        ]
        line = shlex.join(prefix + argv)
        # through a shell, exec it: the command's own exit status and signal, not the shell's
        return f"exec {line}" if argv_for(line)[0] == "/bin/sh" else line

    async def execute(self, command: Command) -> Execution:
        """The local session's own execute: it waits without blocking the event loop (the
        cores' hosts run side by side) and kills the command's processes when cancelled."""
        wrapped = Command(self.wrap(command.text), command.env, command.cwd, command.timeout)
        return await self._local.execute(wrapped)

    async def read_file(self, path: str, cwd: str | None = None) -> bytes:
        return await self._local.read_file(path, cwd)

    async def facts(self) -> dict[str, str]:
        return {**await self._local.facts(), "cpu": str(self.cpu), "nice": str(self.nice)}

    async def reconnect(self, timeout: float) -> None:
        raise SettingError("reset", "hosts pinned runs on this machine and cannot reboot it")

    async def close(self) -> None:
        await self._local.close()


class PinnedBackend(FixedHosts):
    """One host per CPU core of this machine (protocol 2: the cores need no allocation)."""

    kind: ClassVar[str] = "pinned"
    supports_reboot: ClassVar[bool] = False

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key in settings:
            if key not in ("cpus", "nice"):
                raise SettingError(
                    key, f"unknown setting '{key}'", "hosts pinned accepts: cpus, nice"
                )
        cpus = settings.get("cpus")
        if cpus is None:
            raise SettingError(
                None, "hosts pinned needs 'cpus'", "write cpus [2, 3]: one host per core"
            )
        cpus = cpus if isinstance(cpus, tuple) else (cpus,)
        if not cpus or not all(
            isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus
        ):
            raise SettingError(
                "cpus", f"cpus takes core numbers such as [0, 1], got {settings['cpus']!r}"
            )
        if len(set(cpus)) != len(cpus):
            raise SettingError("cpus", "a core is listed twice")
        nice = settings.get("nice", 0)
        if not isinstance(nice, int) or isinstance(nice, bool) or not 0 <= nice <= 19:
            raise SettingError("nice", f"nice takes a whole number in 0-19, got {nice!r}")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> PinnedBackend:
        cls.check_settings(settings)
        cpus = settings["cpus"] if isinstance(settings["cpus"], tuple) else (settings["cpus"],)
        missing = sorted(set(cpus) - os.sched_getaffinity(0))
        if missing:
            raise SettingError(
                "cpus",
                f"core {missing[0]} is not available to this process",
                f"available: {sorted(os.sched_getaffinity(0))}",
            )
        if shutil.which("taskset") is None:
            raise SettingError(
                "cpus", "taskset is not installed", "Debian: apt-get install util-linux"
            )
        return cls(tuple(cpus), int(settings.get("nice", 0)), spec_dir)

    def __init__(self, cpus: tuple[int, ...], nice: int = 0, spec_dir: Path | None = None) -> None:
        self.cpus = cpus
        self.nice = nice
        self.spec_dir = spec_dir

    def hosts(self) -> tuple[str, ...]:
        return tuple(f"cpu{c}" for c in self.cpus)

    async def open(self, host: str) -> PinnedSession:
        return PinnedSession(host, int(host.removeprefix("cpu")), self.nice, self.spec_dir)
