"""The Backend protocol: how benchlang runs commands on hosts.

A backend is a class registered under the ``benchlang.backends`` entry-point group. It
turns the settings of a ``hosts KIND { ... }`` statement into a list of host names and
opens one session per host; a session executes commands and reads files. The executor
does everything else (plans, hooks, measures, the store, retries). See docs/plugins.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

import attrs

from benchlang.errors import SettingError

__all__ = ["Backend", "Command", "Execution", "HostDown", "HostSession", "SettingError"]


class HostDown(Exception):
    """The host stopped answering (connection lost, reboot never came back)."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.message = message


@attrs.frozen
class Command:
    """A shell command to execute on a host, with extra environment and a time limit."""

    text: str
    env: Mapping[str, str] = attrs.field(factory=dict)
    cwd: str | None = None
    timeout: float | None = None


@attrs.frozen
class Execution:
    """What happened when a command ran.

    exit_status is the exit code, or minus the signal number when killed by a signal.
    rusage holds the built-in measures the backend could read (wall_time is always set).

    Optional, for backends that bound the output they keep (docs/measures.md): ``stdout`` and
    ``stderr`` may hold only the last bytes of a stream; ``*_truncated`` then says so,
    ``*_size`` is the stream's full length and ``*_path`` a local file holding all of it,
    valid until the session's next ``execute`` or ``close``. ``unavailable`` maps a built-in
    measure the backend could not take to the reason (a failed measure, never a wrong number).
    ``left_running`` counts the processes the command left behind, killed when it ended.
    """

    exit_status: int
    timed_out: bool
    started: float
    ended: float
    wall_time: float
    stdout: bytes
    stderr: bytes
    rusage: Mapping[str, float] = attrs.field(factory=dict)
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_size: int | None = None
    stderr_size: int | None = None
    stdout_path: str | None = None
    stderr_path: str | None = None
    unavailable: Mapping[str, str] = attrs.field(factory=dict)
    left_running: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out


@runtime_checkable
class HostSession(Protocol):
    """An open connection to one host, reused for every command run there."""

    host: str

    async def execute(self, command: Command) -> Execution: ...

    async def read_file(self, path: str, cwd: str | None = None) -> bytes: ...

    async def facts(self) -> dict[str, str]: ...

    async def reconnect(self, timeout: float) -> None: ...

    async def close(self) -> None: ...


@runtime_checkable
class Backend(Protocol):
    """A kind of hosts (``hosts local``, ``hosts ssh { ... }``)."""

    kind: ClassVar[str]
    supports_reboot: ClassVar[bool]

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        """Validate settings without I/O; raise SettingError naming the bad key."""
        ...

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> Backend: ...

    def hosts(self) -> tuple[str, ...]: ...

    async def open(self, host: str) -> HostSession: ...
