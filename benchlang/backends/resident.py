"""The session's launcher, kept running: one launcher.c process per local session (one more
for each caller that finds it busy), each trial one request over a Unix socket.

Per trial this costs one exec (the command's) instead of two (the launcher's and the
command's): benchlang writes one message (the command, its environment and working
directory, the timeout) and reads one report line. The launcher makes each trial's own output
files in the session's scratch directory while benchlang commits the previous trial, so their
cost is off the path from one trial to the next. The launcher forks, measures, kills and reaps exactly as
described in launcher.c, and has no child left when it reports. A byte on the socket cancels
the running trial; end of file (benchlang gone, even SIGKILLed) cancels it and ends the
launcher. A launcher that dies is detected by the end of its socket: the trial fails with the
reason and the output it wrote, the command's process group (its pid is kept in a memfd the launcher writes) and the
session's cgroup are killed here, and the next trial starts a fresh launcher.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import select
import signal
import socket
import struct
import threading
from collections.abc import Mapping, Sequence

from benchlang.backends.launcher import TrialCgroup, kill_group

OUTPUT_KEEP = 1024 * 1024
"""Bytes of each stream kept in memory per trial (the tail); the full stream stays on disk."""
CANCEL_GRACE = 2.0
"""Seconds a cancelled trial's launcher has to kill, reap and report before it is SIGKILLed."""


def high_fd(fd: int) -> int:
    """Move a descriptor to 10 or above: the spawn's dup2 actions write fds 0-5 in order, and
    a source among them would be overwritten before it is copied."""
    if fd >= 10:
        return fd
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


def tail(fd: int) -> tuple[bytes, int]:
    """The last OUTPUT_KEEP bytes of a stream's file, and its full size."""
    size = os.fstat(fd).st_size
    keep = min(size, OUTPUT_KEEP)
    return (os.pread(fd, keep, size - keep) if keep else b""), size


def parse_report(text: bytes) -> list[str] | None:
    """The launcher's report fields after its tag (launcher.c, "Report"), or None."""
    fields = text.decode(errors="replace").split()
    if fields[:2] != ["benchlang-launch", "1"]:
        return None
    if len(fields) == 17 or (len(fields) == 4 and fields[2] == "files"):
        return fields[2:]
    return None


def report_measures(fields: list[str]) -> dict[str, float]:
    """The built-in measures of a report's fields (parse_report): the command's own rusage
    from wait4, wall time from fork to wait4."""
    wall_ns, utime, stime, maxrss, minflt, majflt = map(int, fields[1:7])
    user, system = utime / 1e6, stime / 1e6
    return {
        "wall_time": wall_ns / 1e9,
        "user_time": user,
        "sys_time": system,
        "cpu_time": user + system,
        "max_rss": float(maxrss),
        "minor_faults": float(minflt),
        "major_faults": float(majflt),
    }


Output = tuple[bytes, int, str | None, bytes, int, str | None]
NO_OUTPUT: Output = (b"", 0, None, b"", 0, None)


def tail_of(path: str, size: int | None) -> tuple[bytes, int, str | None]:
    """The last OUTPUT_KEEP bytes of a stream's file, its size and path: not opened when
    ``size`` is 0, whatever it holds when ``size`` is None (a dead launcher's trial; nothing
    when it is gone). FileNotFoundError when a reported file is gone."""
    if size == 0:
        return b"", 0, path
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        if size is not None:
            raise
        return b"", 0, None
    try:
        kept, size = tail(fd)
    finally:
        os.close(fd)
    return kept, size, path


def environment_block(env: Mapping[str, str]) -> bytes:
    """``env`` as the request's ``K=V\\0`` entries; ValueError for what no process can
    receive (a NUL byte, ``=`` in a name), as ``posix_spawn`` says it."""
    for key in env:
        if not key or "=" in key:
            raise ValueError(f"illegal environment variable name {key!r}")
    text = "".join(f"{key}={value}\0" for key, value in env.items())
    if text.count("\0") != len(env):
        raise ValueError("embedded null byte")
    return os.fsencode(text)


def encode_request(
    argv: Sequence[str],
    environment: bytes,
    cwd: str | None,
    timeout: float | None,
    aslr: str,
    limits: str = "",
) -> bytes:
    """One request (launcher.c, "Usage"); ``environment`` from ``environment_block``,
    ``limits`` from ``TrialLimits.launcher_field`` (launcher.c, "Limits")."""
    fields = [repr(max(0.0, float(timeout))) if timeout is not None else "-1", cwd or "", aslr]
    fields.append(limits)
    fields.append(str(len(argv)))
    fields += argv
    text = "\0".join(fields) + "\0"
    if text.count("\0") != len(fields):
        raise ValueError("embedded null byte")
    payload = os.fsencode(text) + environment
    return struct.pack("=I", len(payload)) + payload


class ResidentLauncher:
    """One running launcher and its socket; serves one trial at a time."""

    def __init__(
        self, path: str, null_fd: int, scratch_fd: int, cgroup: TrialCgroup | None
    ) -> None:
        self.cgroup = cgroup
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock = ours
        theirs_fd = high_fd(theirs.detach())
        self._pid_fd = high_fd(os.memfd_create("benchlang-launcher", os.MFD_CLOEXEC))
        argv = [path, "-p", "5", "-d", "6"]
        actions = [
            (os.POSIX_SPAWN_DUP2, null_fd, 0),
            (os.POSIX_SPAWN_DUP2, null_fd, 1),
            (os.POSIX_SPAWN_DUP2, null_fd, 2),
            (os.POSIX_SPAWN_DUP2, theirs_fd, 3),
            (os.POSIX_SPAWN_DUP2, null_fd, 4),
            (os.POSIX_SPAWN_DUP2, self._pid_fd, 5),
            (os.POSIX_SPAWN_DUP2, scratch_fd, 6),
        ]
        if cgroup is not None:
            argv += ["-g", "4"]
            actions[4] = (os.POSIX_SPAWN_DUP2, cgroup.fd, 4)
        try:
            # Its own process group: a terminal's Ctrl-C reaches benchlang, which cancels.
            self.pid = os.posix_spawn(path, argv, {}, file_actions=actions, setpgroup=0)
        except BaseException:
            ours.close()
            os.close(self._pid_fd)
            raise
        finally:
            os.close(theirs_fd)
        self.fd = ours.fileno()
        self._buffer = b""
        self.dead: str | None = None
        self._reaping = threading.Lock()

    def send(self, request: bytes) -> None:
        """Hand a trial to the launcher; OSError when it is gone (nothing has run)."""
        self.sock.sendall(request)

    def take_report(self) -> bytes | None:
        """Read what is there; the report line once complete (b"" at end of file), else None.
        Called when the socket is readable, so the read does not block."""
        chunk = self.sock.recv(4096)
        if not chunk:
            self._buffer = b""
            return b""
        self._buffer += chunk
        if not self._buffer.endswith(b"\n"):
            return None
        report, self._buffer = self._buffer, b""
        return report

    async def report(self) -> bytes:
        """Await the report on the event loop (so the trial can be cancelled); b"" when the
        launcher ended without one."""
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def ready() -> None:
            try:
                report = self.take_report()
            except OSError:
                report = b""
            if report is not None and not done.done():
                done.set_result(report)

        loop.add_reader(self.fd, ready)
        try:
            return await done
        finally:
            loop.remove_reader(self.fd)

    def report_within(self, seconds: float) -> bytes | None:
        """The report if it comes within ``seconds``, in this thread (b"" when the launcher
        ended without one, as ``report``), else None."""
        try:
            return self.wait_report(seconds)
        except OSError:
            return b""

    def wait_report(self, seconds: float | None) -> bytes | None:
        """Block until the report (b"" at end of file), or None after ``seconds``."""
        poller = select.poll()
        poller.register(self.fd, select.POLLIN)
        while True:
            if not poller.poll(None if seconds is None else seconds * 1000.0):
                return None
            report = self.take_report()
            if report is not None:
                return report

    def cancel(self) -> bytes | None:
        """Cancel the running trial: the launcher kills and reaps it, then reports. None when
        it does not within CANCEL_GRACE (it is then killed: ``kill``)."""
        try:
            self.sock.send(b"C")
        except OSError:
            return b""
        return self.wait_report(CANCEL_GRACE)

    def running(self) -> tuple[int, int]:
        """The running trial's command (its process group; 0 once it ended) and the number
        in its output files' names (0 before the first trial)."""
        try:
            data = os.pread(self._pid_fd, 16, 0)
        except OSError:  # ended and reaped meanwhile (another thread)
            return 0, 0
        return struct.unpack("=qq", data) if len(data) == 16 else (0, 0)

    def kill(self) -> str:
        """SIGKILL the launcher and the command's process group (until none of it runs), reap
        the launcher; how the launcher ended. What the command left elsewhere is the cgroup's to kill."""
        if self.dead is not None:
            return self.dead
        group = self.running()[0]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)
        if group > 0:
            kill_group(group)
        return self._reap(None)

    def _reap(self, within: float | None) -> str:
        with self._reaping:  # a worker thread's trial and the session's close may both end it
            return self.dead or self._reap_once(within)

    def _reap_once(self, within: float | None) -> str:
        if within is not None:
            pidfd = os.pidfd_open(self.pid)
            try:
                poller = select.poll()
                poller.register(pidfd, select.POLLIN)
                if not poller.poll(within * 1000.0):
                    os.kill(self.pid, signal.SIGKILL)
            finally:
                os.close(pidfd)
        _, status = os.waitpid(self.pid, 0)
        code = os.waitstatus_to_exitcode(status)
        self.dead = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        self.sock.close()
        os.close(self._pid_fd)
        return self.dead

    def close(self) -> None:
        """End the launcher: end of file on its socket, SIGKILL if it does not exit in 2 s."""
        if self.dead is None:
            with contextlib.suppress(OSError):
                self.sock.shutdown(socket.SHUT_WR)
            self._reap(CANCEL_GRACE)


class LauncherPool:
    """A session's launchers: one, started on its first trial and kept; one more for each
    caller that finds them all busy, each in a cgroup of its own (a launcher empties its cgroup
    after every trial). Their output files go to the session's scratch directory."""

    def __init__(self, path: str, scratch: str, cgroup: TrialCgroup | None) -> None:
        self.path = path
        self.scratch = scratch
        self.cgroup = cgroup
        self._scratch_fd = high_fd(os.open(scratch, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
        self._null = high_fd(os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC))
        self._idle: list[ResidentLauncher] = []
        self._residents: set[ResidentLauncher] = set()
        self._starting = threading.Lock()

    def hand_over(self, request: bytes) -> ResidentLauncher:
        """Send the trial to an idle launcher, starting one when none is idle or the idle one
        is gone (its socket refuses the request: nothing ran)."""
        for _ in range(2):
            try:
                resident: ResidentLauncher | None = self._idle.pop()
            except IndexError:  # none idle (another thread may have taken the last one)
                resident = None
            if resident is None:
                resident = self._new()
            try:
                resident.send(request)
                return resident
            except OSError:
                self.retire(resident)
        raise OSError("the launcher refused the request twice")

    def _new(self) -> ResidentLauncher:
        """A launcher in the session's cgroup, or in a cgroup of its own when another one
        already uses it (each launcher empties its cgroup after every trial)."""
        with self._starting:
            cgroup = self.cgroup
            if cgroup is not None and any(r.cgroup is cgroup for r in self._residents):
                created = TrialCgroup.create()
                if isinstance(created, str):
                    raise OSError(f"a second launcher needs a cgroup of its own: {created}")
                cgroup = created
            resident = ResidentLauncher(self.path, self._null, self._scratch_fd, cgroup)
            self._residents.add(resident)
        return resident

    def retire(self, resident: ResidentLauncher, cancelled: bool = False) -> str:
        """End a launcher: by its socket after a cancelled trial it reported, else (gone or
        hung) killed with what its trial may have left; its own cgroup is removed."""
        self._residents.discard(resident)
        if cancelled:
            resident.close()
            why = "cancelled"
        else:
            why = resident.kill()
        if resident.cgroup is not None:
            resident.cgroup.kill()
            if resident.cgroup is not self.cgroup:
                resident.cgroup.close()
        return why

    def idle(self, resident: ResidentLauncher) -> None:
        """A launcher that reported its trial, ready for the next one."""
        self._idle.append(resident)

    def output(self, launcher: int, files: int, *sizes: int) -> Output:
        """A launcher's trial output: the tails of its files (launcher.c: ``PID-N.out``);
        ``sizes`` as reported, none for a dead launcher's trial."""
        if files <= 0:
            return NO_OUTPUT
        base = f"{self.scratch}/{launcher}-{files}"
        out, err = sizes or (None, None)
        return (*tail_of(base + ".out", out), *tail_of(base + ".err", err))

    def close(self) -> None:
        """End every launcher (end of file on its socket) and their own cgroups."""
        for resident in list(self._residents):
            self.retire(resident, cancelled=True)
        self._idle.clear()
        os.close(self._null)
        os.close(self._scratch_fd)
