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

import contextlib
import fcntl
import os
import select
import signal
import socket
import struct
from collections.abc import Mapping

from benchlang.backends.launcher import TrialCgroup

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
    argv: list[str], environment: bytes, cwd: str | None, timeout: float | None, aslr: str
) -> bytes:
    """One request (launcher.c, "Usage"); ``environment`` from ``environment_block``."""
    fields = [repr(max(0.0, float(timeout))) if timeout is not None else "-1", cwd or "", aslr]
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
        data = os.pread(self._pid_fd, 16, 0)
        return struct.unpack("=qq", data) if len(data) == 16 else (0, 0)

    def kill(self) -> str:
        """SIGKILL the launcher and the command's process group, reap the launcher; how the
        launcher ended. What the command left elsewhere is the cgroup's to kill."""
        group = self.running()[0]
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)
        if group > 0:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        return self._reap(None)

    def _reap(self, within: float | None) -> str:
        if self.dead is not None:
            return self.dead
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
