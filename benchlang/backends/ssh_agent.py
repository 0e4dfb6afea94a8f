"""The benchlang worker agent: a stdlib-only Python 3 program the SSH backend starts once per
host, on one channel of the persistent connection, as ``python3 -u -c <this source> WORKDIR``.

It reads one JSON request per line on stdin and answers with one JSON header line followed by
the raw bytes the header announces. Each command is spawned in a new session (``setsid``; its
process group id is its pid) with stdout and stderr in scratch files; a timeout, a ``kill``
request or the controller's connection closing (end of stdin) kills the whole process group.
``wait4`` gives the same built-in measures as the local backend, measured on the host.

Requests: ``{"op": "exec", "argv", "env", "cwd", "timeout"}``, ``{"op": "read", "path",
"cwd"}``, ``{"op": "facts"}``. This file must keep running on any Python >= 3.8 (Debian's
python3); it imports nothing from benchlang.
"""

import contextlib
import json
import os
import platform
import select
import signal
import sys
import tempfile
import time

OUTPUT_LIMIT = 64 * 1024 * 1024


def _send(header, *payloads):
    data = json.dumps(header).encode() + b"\n" + b"".join(payloads)
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


def _tail(fd):
    size = os.fstat(fd).st_size
    os.lseek(fd, max(0, size - OUTPUT_LIMIT), os.SEEK_SET)
    return os.read(fd, OUTPUT_LIMIT) if size else b""


def _kill_group(pgid):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _facts():
    facts = {
        "hostname": platform.node(),
        "kernel": platform.system() + " " + platform.release(),
        "machine": platform.machine(),
        "cores": str(os.cpu_count() or ""),
        "python": platform.python_version(),
    }
    for key, path, field in (
        ("cpu_model", "/proc/cpuinfo", "model name"),
        ("memory", "/proc/meminfo", "MemTotal"),
    ):
        try:
            with open(path) as handle:
                for line in handle:
                    if line.startswith(field):
                        facts[key] = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") as handle:
            facts["governor"] = handle.read().strip()
    except OSError:
        pass
    return facts


class Agent:
    def __init__(self, workdir):
        self.workdir = workdir
        self.out = tempfile.TemporaryFile(prefix="benchlang-out-")  # noqa: SIM115 (kept for the session)
        self.err = tempfile.TemporaryFile(prefix="benchlang-err-")  # noqa: SIM115
        self.null = os.open(os.devnull, os.O_RDONLY)
        self.base_env = dict(os.environ)
        self.stdin = sys.stdin.buffer

    def where(self, cwd):
        return os.path.join(self.workdir, cwd) if cwd else self.workdir

    def wait(self, pid, timeout):
        """Wait for the child; kill its group on timeout, on a kill request or on end of stdin.
        Returns (timed_out, controller_gone)."""
        pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
        poller = select.poll()
        poller.register(0, select.POLLIN | select.POLLHUP)
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        deadline = None if timeout is None else time.monotonic() + timeout
        step = 0.0005
        try:
            while True:
                if (
                    pidfd is None
                    and os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
                ):
                    return False, False
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    _kill_group(pid)
                    return True, False
                wait_ms = -1 if left is None else left * 1000.0
                if pidfd is None:
                    wait_ms = step * 1000.0 if wait_ms < 0 else min(wait_ms, step * 1000.0)
                    step = min(step * 2, 0.01)
                for fd, _event in poller.poll(wait_ms):
                    if fd == pidfd:
                        return False, False
                    line = self.stdin.readline()
                    if not line:
                        _kill_group(pid)
                        return False, True
                    if json.loads(line).get("op") == "kill":
                        _kill_group(pid)
                        return True, False
        finally:
            if pidfd is not None:
                os.close(pidfd)

    def execute(self, request):
        out, err = self.out.fileno(), self.err.fileno()
        for fd in (out, err):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        env = self.base_env
        if request.get("env"):
            env = dict(env, **request["env"])
        argv = request["argv"]
        actions = [
            (os.POSIX_SPAWN_DUP2, self.null, 0),
            (os.POSIX_SPAWN_DUP2, out, 1),
            (os.POSIX_SPAWN_DUP2, err, 2),
        ]
        t0 = time.perf_counter()
        where = self.where(request.get("cwd"))
        what = "enter " + repr(where)
        try:
            os.chdir(where)
            what = "start " + repr(argv[0])
            pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions, setsid=True)
        except OSError as exc:
            wall = time.perf_counter() - t0
            message = f"benchlang: cannot {what}: {exc.strerror}\n".encode()
            _send(
                {
                    "status": 127,
                    "timed_out": False,
                    "wall": wall,
                    "rusage": {"wall_time": wall},
                    "out": 0,
                    "err": len(message),
                },
                message,
            )
            return True
        finally:
            os.chdir(self.workdir)
        timed_out, gone = self.wait(pid, request.get("timeout"))
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
        _kill_group(pid)
        if gone:
            return False
        rusage = {
            "wall_time": wall,
            "user_time": usage.ru_utime,
            "sys_time": usage.ru_stime,
            "cpu_time": usage.ru_utime + usage.ru_stime,
            "max_rss": float(usage.ru_maxrss),
            "minor_faults": float(usage.ru_minflt),
            "major_faults": float(usage.ru_majflt),
        }
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        stdout, stderr = _tail(out), _tail(err)
        header = {
            "status": code,
            "timed_out": timed_out,
            "wall": wall,
            "rusage": rusage,
            "out": len(stdout),
            "err": len(stderr),
        }
        _send(header, stdout, stderr)
        return True

    def read(self, request):
        path = os.path.join(self.where(request.get("cwd")), request["path"])
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            _send({"errno": exc.errno, "error": exc.strerror or str(exc), "path": path, "data": 0})
            return
        _send({"data": len(data)}, data)

    def serve(self):
        _send(
            {
                "agent": 1,
                "pid": os.getpid(),
                "workdir": self.workdir,
                "python": platform.python_version(),
            }
        )
        for line in iter(self.stdin.readline, b""):
            request = json.loads(line)
            op = request.get("op")
            if op == "exec":
                if not self.execute(request):
                    return
            elif op == "read":
                self.read(request)
            elif op == "facts":
                payload = json.dumps(_facts()).encode()
                _send({"data": len(payload)}, payload)
            elif op != "kill":
                _send({"error": f"unknown request {op!r}", "data": 0})


def main():
    workdir = os.path.abspath(
        os.path.expanduser(sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else "~")
    )
    try:
        os.makedirs(workdir, exist_ok=True)
        os.chdir(workdir)
    except OSError as exc:
        _send({"fatal": f"cannot use workdir {workdir}: {exc.strerror or exc}"})
        return 2
    Agent(workdir).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
