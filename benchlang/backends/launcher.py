"""The trial launcher and the trial cgroup: what lets the local backend measure the command
alone and leave nothing running.

``launcher.c`` (next to this file) is built with the package, else compiled on first use
(``benchlang.native``). Without a build (no compiler at install nor at first use, or
``BENCHLANG_NATIVE=0``) the local backend falls back to spawning commands itself, and
``max_rss`` is reported unavailable with the reason (a Python parent's resident size would
leak into it, see launcher.c), never as a wrong number.

A trial cgroup is a child of this process's own cgroup v2 (found in ``/proc/self/cgroup`` and
``/proc/self/mountinfo``), created when it is writable (root, or a delegated subtree); else
process groups are the only fence. ``BENCHLANG_ISOLATION=pgroup`` turns cgroups off.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

import attrs

from benchlang.native import LAUNCHER, choice, find

ISOLATION_ENV = "BENCHLANG_ISOLATION"


@attrs.frozen
class Launcher:
    """The compiled launcher (``path``), or why there is none (``reason``)."""

    path: str | None
    reason: str = ""


@functools.cache
def _find(cc: str | None, enabled: bool) -> Launcher:
    path, reason = find(LAUNCHER, cc, enabled)
    return Launcher(str(path) if path else None, reason)


def launcher() -> Launcher:
    """The launcher for this machine: the package's build, else one compiled once per source
    version and user."""
    return _find(*choice())


def kill_group(group: int, within: float = 5.0) -> None:
    """SIGKILL a trial's process group and wait until none of it runs. A signal is delivered
    asynchronously: on a busy machine a killed process may still be scheduled a while later
    (zombies awaiting their reaper do not run, so they do not count)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    deadline = time.monotonic() + within
    while _group_runs(group) and time.monotonic() < deadline:
        time.sleep(0.001)


def _group_runs(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = os.scandir("/proc")
    except OSError:
        return False
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if fields[0] not in ("Z", "X") and int(fields[2]) == group:
                return True
    return False


# -- cgroup v2 -------------------------------------------------------------------------------


def _own_cgroup_dir() -> Path:
    """This process's cgroup v2 directory (``0::PATH`` in /proc/self/cgroup, below the
    cgroup2 mount point in /proc/self/mountinfo), or OSError saying why there is none."""
    path = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        if line.startswith("0::"):
            path = line[3:]
    if path is None:
        raise OSError("no cgroup v2 hierarchy in /proc/self/cgroup")
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        if right.split(" ", 1)[0] == "cgroup2":
            fields = left.split()
            root, mount = fields[3], fields[4]
            relative = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
            return Path(mount) / relative
    raise OSError("cgroup2 is not mounted")


class TrialCgroup:
    """One session's cgroup, reused trial after trial (emptied after each)."""

    _count = 0

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd

    @classmethod
    def create(cls) -> TrialCgroup | str:
        """A new empty cgroup for a session, or the reason there cannot be one."""
        if os.environ.get(ISOLATION_ENV, "").lower() == "pgroup":
            return f"{ISOLATION_ENV}=pgroup"
        try:
            parent = _own_cgroup_dir()
            _remove_stale(parent)
            cls._count += 1
            path = parent / f"benchlang-{os.getpid()}-{cls._count}"
            path.mkdir()
        except OSError as err:
            return f"cgroup v2: {err.strerror or err}" + (
                f" ({err.filename})" if getattr(err, "filename", None) else ""
            )
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        if fd < 10:  # clear of the fds 0-4 a spawn's dup2 actions write
            fd, low = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10), fd
            os.close(low)
        if not (path / "cgroup.freeze").exists():
            os.close(fd)
            path.rmdir()
            return "cgroup v2 without cgroup.freeze (Linux < 5.2)"
        return cls(path, fd)

    def populated(self) -> bool:
        try:
            return "populated 1" in (self.path / "cgroup.events").read_text()
        except OSError:
            return False

    def kill(self, within: float = 5.0) -> None:
        """SIGKILL everything in the cgroup and wait until it is empty: freeze, kill each pid,
        thaw (cgroup-v2.rst, "cgroup.freeze"). Not ``cgroup.kill``: see launcher.c, a cgroup
        killed through it kills every later CLONE_INTO_CGROUP child on Linux 6.x."""
        deadline = time.monotonic() + within
        if not self.populated():
            return
        with contextlib.suppress(OSError):
            (self.path / "cgroup.freeze").write_text("1")
        try:
            while self.populated() and time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    for pid in (self.path / "cgroup.procs").read_text().split():
                        with contextlib.suppress(ProcessLookupError, ValueError):
                            os.kill(int(pid), 9)
                time.sleep(0.001)
        finally:
            with contextlib.suppress(OSError):
                (self.path / "cgroup.freeze").write_text("0")

    def close(self) -> None:
        self.kill()
        os.close(self.fd)
        for _ in range(100):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.01)


def _remove_stale(parent: Path) -> None:
    """Empty and remove the cgroups of benchlang processes that are gone (killed before close),
    saying so on stderr: benchlang.backends.cgroups does it for every kind of benchlang cgroup."""
    from benchlang.backends.cgroups import _remove_stale as remove_stale

    remove_stale(parent)


def scratch_dir() -> str:
    """A trial scratch directory named after this process; those of this user's benchlang
    processes that are gone (killed: nothing removed them) are removed first."""
    base = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            parts = entry.name.split("-")
            if (
                len(parts) == 4
                and entry.name.startswith("benchlang-trials-")
                and parts[2].isdigit()
                and not os.path.exists(f"/proc/{parts[2]}")
                and entry.stat(follow_symlinks=False).st_uid == os.getuid()
            ):
                shutil.rmtree(entry.path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"benchlang-trials-{os.getpid()}-")
