"""The local backend's trials without the C launcher: the command spawned from this process
(process group, the session's cgroup and the trial's limits entered through ``/bin/sh``
prologues, its CPUs inherited from the spawning thread's affinity), waited for on a pidfd and
measured with ``wait4`` (``max_rss`` unavailable with the reason, local.py). Also the
``Trial`` both paths share."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from benchlang.backends.base import Execution
from benchlang.backends.cgroups import TrialLimits
from benchlang.backends.launcher import Launcher, TrialCgroup, kill_group
from benchlang.backends.resident import ResidentLauncher, high_fd, tail

OUTPUT_FLAGS = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC


@attrs.define
class Trial:
    """A running trial: its process (the launcher, or the command in the fallback) and files."""

    pid: int
    out: int
    err: int
    out_path: str
    err_path: str
    started: float
    t0: float
    launcher: ResidentLauncher | None = None
    limits: TrialLimits | None = None
    request: dict[str, Any] | None = None


def setarch(aslr: bool | None, argv: Sequence[str]) -> Sequence[str]:
    """``argv`` under setarch(8) with randomisation off (``-R``) or as the host has it, when
    a hidden aslr factor asks; both levels pay the same exec (no launcher to set it)."""
    if aslr is None:
        return argv
    return ["setarch", os.uname().machine, *([] if aslr else ["-R"]), *argv]


class Spawned:
    """The launcher-less path of ``LocalSession`` (a mixin; its attributes are the session's,
    declared here with their types)."""

    _previous: tuple[str, str] | None
    _count: int
    _scratch: str
    _cgroup: TrialCgroup | None
    _null: int
    _launcher: Launcher
    _execution: Callable[..., Execution]
    """``LocalSession._execution``: a trial's measures from its exit and rusage."""

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
        out = high_fd(os.open(out_path, OUTPUT_FLAGS, 0o600))
        err = high_fd(os.open(err_path, OUTPUT_FLAGS, 0o600))
        return out, err, out_path, err_path

    def _spawn(
        self,
        argv: Sequence[str],
        env: dict[str, str],
        cwd: str | None,
        aslr: bool | None,
        out: int,
        err: int,
        limits: TrialLimits | None = None,
    ) -> int:
        """Without the launcher: the command spawned from here (setarch, cd, the limits'
        cgroups and cgroup entry through /bin/sh prologues; its CPUs from this thread's)."""
        argv = setarch(aslr, argv)
        if limits is not None:
            argv = limits.prologue(argv)
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
        if limits is None:
            return os.posix_spawnp(argv[0], list(argv), env, file_actions=actions, setpgroup=0)
        with limits.pinned():
            return os.posix_spawnp(argv[0], list(argv), env, file_actions=actions, setpgroup=0)

    def _finish(
        self, trial: Trial, status: int, usage: Any, timed_out: bool, cpu_killed: bool = False
    ) -> Execution:
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
        return self._execution(
            trial, exit_status, timed_out, rusage, {"max_rss": why}, 0, output, None, cpu_killed
        )

    def _after_exit(self, trial: Trial) -> None:
        """The fallback's clean-up once the command exited: its group and its cgroup."""
        kill_group(trial.pid)
        if self._cgroup is not None and self._cgroup.populated():
            self._cgroup.kill()

    def _reap(self, trial: Trial, ended: str) -> Execution:
        """The fallback's command killed unless it ``exited``, reaped, its Execution."""
        if ended != "exited":
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(trial.pid, signal.SIGKILL)
        _, status, usage = os.wait4(trial.pid, 0)
        self._after_exit(trial)
        return self._finish(trial, status, usage, ended == "timeout", ended == "cpu")
