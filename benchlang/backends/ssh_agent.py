"""The benchlang worker agent: a stdlib-only Python 3 program the SSH backend starts once per
host, on one channel of the persistent connection, as ``python3 -u -c <this source> WORKDIR``.

It reads one JSON request per line on stdin and answers with one JSON header line followed by
the raw bytes the header announces. Each command is spawned in a new session (``setsid``; its
process group id is its pid) and, where the host's cgroup v2 is writable, in the agent's trial
cgroup (so a ``setsid`` grandchild cannot escape), with stdout and stderr in files of its own.
When the command exits, times out, a ``kill`` request comes or the controller's connection
closes (end of stdin), everything it left is killed and reaped before the answer: its process
group, its cgroup (freeze, kill each pid, thaw), and every orphan, since the agent is a child
subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``, man 2 prctl). ``facts`` reports ``isolation``:
``cgroup`` or ``pgroup``. ``wait4`` gives the built-in measures, measured on the host;
``max_rss`` only when it exceeds the agent's own peak: Linux copies the parent's peak into a
child at exec, so a smaller figure is the agent's and is reported unavailable. The answer
also carries ``out_size``/``err_size`` and ``out_truncated``/``err_truncated`` (only
the last OUTPUT_LIMIT bytes of a stream are sent).

An ``exec`` request's ``limits`` (the machine block: cpus, memory, cpu_time, cpu_quota) are
applied as the local backend applies them (cgroups.py): the trial's cgroups made and entered
by a ``/bin/sh`` prologue with ``ulimit -t``, its CPUs inherited from the agent's affinity at
spawn, its CPU time watched and killed at the limit; the answer then carries ``limits`` (as
asked), ``oom_kills``, ``cpu_killed``, ``cpu_used`` and the measures (``memory_peak``, ...),
or ``failure`` when a limit cannot be enforced here (nothing ran).

Requests: ``{"op": "exec", "argv", "env", "cwd", "timeout", "limits"}``, ``{"op": "read",
"path", "cwd"}``, ``{"op": "facts"}``. This file must keep running on any Python >= 3.8
(Debian's python3); it is sent after cgroups.py and agent_host.py (agent_protocol.AGENT_PARTS)
and imports nothing from benchlang there.
"""

import contextlib
import json
import os
import platform
import resource
import select
import shutil
import signal
import sys
import tempfile
import time

if "TrialLimits" not in globals():  # imported as a module, not sent behind its parts
    from benchlang.backends.agent_host import Cgroup, _facts, limit_facts
    from benchlang.backends.cgroups import LimitError, TrialLimits

OUTPUT_LIMIT = 1024 * 1024
PR_SET_CHILD_SUBREAPER = 36


def _send(header, *payloads):
    data = json.dumps(header).encode() + b"\n" + b"".join(payloads)
    out = sys.stdout.buffer
    out.write(data)
    out.flush()


def _tail(fd):
    """The last OUTPUT_LIMIT bytes of a stream's file, and its full size."""
    size = os.fstat(fd).st_size
    keep = min(size, OUTPUT_LIMIT)
    return (os.pread(fd, keep, size - keep) if keep else b""), size


def _become_subreaper():
    """Orphaned descendants (``setsid`` ones too) are re-parented to the agent (man 2 prctl),
    which kills and reaps them after each command. False where prctl is out of reach."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children():
    """The agent's direct children (/proc/PID/task/TID/children, else a scan of /proc)."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:
        pass
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/" + name + "/stat") as handle:
                if int(handle.read().rsplit(")", 1)[1].split()[1]) == me:
                    found.append(int(name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def _reap_all():
    """Kill and reap every child, generation after generation, until none is left (ECHILD).
    Returns how many were killed."""
    killed = 0
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return killed
        if pid:
            continue
        for child in _children():
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
                killed += 1
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return killed


def _kill_group(pgid):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _scratch_dir():
    """A scratch directory named after this agent's pid; those of this user's agents that are
    gone (killed with their connection) are removed first."""
    base = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            parts = name.split("-")
            path = os.path.join(base, name)
            if (
                len(parts) == 4
                and name.startswith("benchlang-agent-")
                and parts[2].isdigit()
                and not os.path.exists("/proc/" + parts[2])
                and os.lstat(path).st_uid == os.getuid()
            ):
                shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"benchlang-agent-{os.getpid()}-")


class Agent:
    def __init__(self, workdir):
        self.workdir = workdir
        self.scratch = _scratch_dir()
        self.count = 0
        self.null = os.open(os.devnull, os.O_RDONLY)
        self.subreaper = _become_subreaper()
        self.cgroup = Cgroup()
        self.base_env = dict(os.environ)
        self.stdin = sys.stdin.buffer

    def where(self, cwd):
        return os.path.join(self.workdir, cwd) if cwd else self.workdir

    def wait(self, pid, timeout, limits=None):
        """Wait for the child; kill its group on timeout, at its CPU-time limit
        (``self.cpu_killed``), on a kill request or on end of stdin.
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
                check = limits.next_check() if limits is not None else None
                if check is not None:
                    if limits.exceeded():
                        self.cpu_killed = True
                        _kill_group(pid)
                        return False, False
                    wait_ms = check * 1000.0 if wait_ms < 0 else min(wait_ms, check * 1000.0)
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

    def isolation(self):
        if self.cgroup.path is not None:
            return {"isolation": "cgroup", "isolation_detail": self.cgroup.path}
        detail = "process group only: " + self.cgroup.reason
        return {"isolation": "pgroup", "isolation_detail": detail}

    def clean_up(self, pid):
        """Kill and reap what the command left: its group, its cgroup, every orphan."""
        left = 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
            left += 1
        left += self.cgroup.kill()
        if self.subreaper:
            left += _reap_all()
        return left

    def execute(self, request):
        self.count += 1
        base = os.path.join(self.scratch, str(self.count))
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL
        out = os.open(base + ".out", flags, 0o600)
        err = os.open(base + ".err", flags, 0o600)
        try:
            return self._execute(request, out, err)
        finally:
            os.close(out)
            os.close(err)
            for suffix in (".out", ".err"):
                with contextlib.suppress(OSError):
                    os.unlink(base + suffix)

    def _execute(self, request, out, err):
        limits, self.cpu_killed = None, False
        if request.get("limits"):
            try:
                limits = TrialLimits(**request["limits"]).create()
            except LimitError as exc:
                _send(
                    {
                        "status": 126,
                        "timed_out": False,
                        "wall": 0.0,
                        "out": 0,
                        "err": 0,
                        "rusage": {"wall_time": 0.0},
                        "failure": str(exc),
                    }
                )
                return True
        try:
            return self._limited(request, out, err, limits)
        finally:
            if limits is not None:
                limits.remove()

    def _limited(self, request, out, err, limits):
        env = self.base_env
        if request.get("env"):
            env = dict(env, **request["env"])
        argv = command = request["argv"]
        if request.get("aslr") is not None:
            # A hidden aslr factor: setarch -R turns randomisation off (ADDR_NO_RANDOMIZE);
            # both levels go through setarch so that they pay the same exec.
            off = [] if request["aslr"] else ["-R"]
            argv = ["setarch", os.uname().machine, *off, *argv]
        if limits is not None:
            argv = limits.prologue(argv)
        if self.cgroup.path is not None:
            # The command enters the cgroup through a shell prologue (posix_spawn cannot place
            # a child in a cgroup), so say here, as posix_spawnp would, when it cannot start.
            procs = os.path.join(self.cgroup.path, "cgroup.procs")
            argv = ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', procs, *argv]
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
            what = "start " + repr(command[0])
            if argv is not command and not shutil.which(command[0], path=env.get("PATH")):
                raise FileNotFoundError(2, "No such file or directory")
            with limits.pinned() if limits is not None else contextlib.nullcontext():
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
        timed_out, gone = self.wait(pid, request.get("timeout"), limits)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
        left = self.clean_up(pid)
        if gone:
            return False
        rusage = {
            "wall_time": wall,
            "user_time": usage.ru_utime,
            "sys_time": usage.ru_stime,
            "cpu_time": usage.ru_utime + usage.ru_stime,
            "minor_faults": float(usage.ru_minflt),
            "major_faults": float(usage.ru_majflt),
        }
        unavailable = {}
        own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        if usage.ru_maxrss > own_peak:
            rusage["max_rss"] = float(usage.ru_maxrss)
        else:
            unavailable["max_rss"] = (
                f"wait4 reports {usage.ru_maxrss} KiB, not above the agent's own peak of "
                f"{own_peak} KiB, which Linux copies into a child at exec: the command's own "
                "peak resident size cannot be told apart (it is smaller)"
            )
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        (stdout, out_size), (stderr, err_size) = _tail(out), _tail(err)
        limited = {}
        if limits is not None:
            measures, missing, oom_kills, used = limits.finish()
            rusage.update(measures)
            unavailable.update(missing)
            limited = {"limits": request["limits"], "oom_kills": oom_kills, "cpu_used": used}
            limited["cpu_killed"] = self.cpu_killed
        header = {
            "status": code,
            "timed_out": timed_out,
            "wall": wall,
            "rusage": rusage,
            "out": len(stdout),
            "err": len(stderr),
            "out_size": out_size,
            "err_size": err_size,
            "out_truncated": out_size > len(stdout),
            "err_truncated": err_size > len(stderr),
            "left_running": left,
            "unavailable": unavailable,
            **limited,
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
                facts = dict(_facts(), **self.isolation(), **limit_facts())
                payload = json.dumps(facts).encode()
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
    agent = Agent(workdir)
    try:
        agent.serve()
    finally:
        agent.cgroup.close()
        shutil.rmtree(agent.scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
