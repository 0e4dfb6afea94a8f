"""What the benchlang agent knows of its host: its facts (kernel, CPU, memory, governor,
compilers) and its session's cgroup v2 (the fence around each command). Standard library
only, Python >= 3.8: sent to a host in front of ssh_agent.py (agent_protocol.AGENT_PARTS)."""

import contextlib
import os
import platform
import shutil
import signal
import subprocess
import time

if "hierarchies" not in globals():  # imported as a module, not sent behind cgroups.py
    from benchlang.backends.cgroups import _read, hierarchies


def _remove_stale(parent):
    """Empty and remove the cgroups of agents that are gone (killed with their connection)."""
    with contextlib.suppress(OSError):
        for name in os.listdir(parent):
            pid = name[len("benchlang-agent-") :]
            if not name.startswith("benchlang-agent-") or not pid.isdigit():
                continue
            if os.path.exists("/proc/" + pid):
                continue
            path = os.path.join(parent, name)
            with contextlib.suppress(OSError), open(os.path.join(path, "cgroup.kill"), "w") as f:
                f.write("1")
            for _ in range(50):
                try:
                    os.rmdir(path)
                    break
                except OSError:
                    time.sleep(0.002)


class Cgroup:
    """The agent's trial cgroup: a child of its own cgroup v2, when that is writable."""

    def __init__(self):
        self.path = None
        self.reason = ""
        try:
            own = None
            with open("/proc/self/cgroup") as handle:
                for line in handle:
                    if line.startswith("0::"):
                        own = line[3:].strip()
            if own is None:
                raise OSError("no cgroup v2 hierarchy")
            mount = None
            with open("/proc/self/mountinfo") as handle:
                for line in handle:
                    left, _, right = line.partition(" - ")
                    if right.split(" ", 1)[0] == "cgroup2":
                        fields = left.split()
                        root = fields[3]
                        rel = os.path.relpath(own, root) if root != "/" else own.lstrip("/")
                        mount = os.path.join(fields[4], rel)
                        break
            if mount is None:
                raise OSError("cgroup2 is not mounted")
            _remove_stale(mount)
            path = os.path.join(mount, f"benchlang-agent-{os.getpid()}")
            os.mkdir(path)
            if not os.path.exists(os.path.join(path, "cgroup.freeze")):
                os.rmdir(path)
                raise OSError("no cgroup.freeze (Linux < 5.2)")
            self.path = path
        except OSError as exc:
            self.reason = "cgroup v2: " + (exc.strerror or str(exc))

    def _read(self, name):
        with open(os.path.join(self.path, name)) as handle:
            return handle.read()

    def _write(self, name, text):
        with contextlib.suppress(OSError), open(os.path.join(self.path, name), "w") as handle:
            handle.write(text)

    def populated(self):
        try:
            return "populated 1" in self._read("cgroup.events")
        except OSError:
            return False

    def kill(self):
        """Freeze, SIGKILL each pid, thaw, until empty (cgroup-v2.rst "cgroup.freeze"; not
        cgroup.kill, which on Linux 6.x spoils the cgroup for later clone3 children)."""
        if self.path is None or not self.populated():
            return 0
        killed = 0
        self._write("cgroup.freeze", "1")
        deadline = time.monotonic() + 5.0
        try:
            while self.populated() and time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    for pid in self._read("cgroup.procs").split():
                        with contextlib.suppress(ProcessLookupError, ValueError):
                            os.kill(int(pid), signal.SIGKILL)
                            killed += 1
                with contextlib.suppress(ChildProcessError):
                    while os.waitpid(-1, os.WNOHANG)[0]:
                        pass
                time.sleep(0.001)
        finally:
            self._write("cgroup.freeze", "0")
        return killed

    def close(self):
        if self.path is not None:
            self.kill()
            with contextlib.suppress(OSError):
                os.rmdir(self.path)


def _facts():
    """The host's facts: kernel, OS, architecture, CPU model, maximum frequency and cores,
    memory, governor, and the compilers found on PATH (docs/hardware-factors.md)."""
    facts = {
        "hostname": platform.node(),
        "kernel": platform.system() + " " + platform.release(),
        "machine": platform.machine(),
        "arch": platform.machine(),
        "cores": str(os.cpu_count() or ""),
        "python": platform.python_version(),
    }
    for key, path, field in (
        ("cpu_model", "/proc/cpuinfo", "model name"),
        ("cpu_freq", "/proc/cpuinfo", "cpu MHz"),
        ("memory", "/proc/meminfo", "MemTotal"),
        ("os", "/etc/os-release", "PRETTY_NAME="),
    ):
        try:
            with open(path) as handle:
                for line in handle:
                    if line.startswith(field):
                        value = line[len(field) :] if field.endswith("=") else line.split(":", 1)[1]
                        facts[key] = value.strip().strip('"')
                        break
        except OSError:
            pass
    if "cpu_freq" in facts:
        facts["cpu_freq"] = f"{round(float(facts['cpu_freq']))} MHz"
    cpufreq = "/sys/devices/system/cpu/cpu0/cpufreq/"
    try:
        with open(cpufreq + "cpuinfo_max_freq") as handle:  # kHz; steadier than cpu MHz
            facts["cpu_freq"] = f"{int(handle.read()) // 1000} MHz"
    except (OSError, ValueError):
        pass
    try:
        with open(cpufreq + "scaling_governor") as handle:
            facts["governor"] = handle.read().strip()
    except OSError:
        pass
    for compiler in ("gcc", "clang", "cc"):
        if shutil.which(compiler):
            try:
                done = subprocess.run(
                    [compiler, "-dumpversion"], capture_output=True, timeout=10, check=False
                )
                version = done.stdout.decode(errors="replace").strip()
                if done.returncode == 0 and version:
                    facts[compiler + "_version"] = version
            except (OSError, subprocess.SubprocessError):
                pass
    return facts


def limit_facts(layout=None):
    """How this host enforces each limit (the facts ``limits_memory``, ``limits_cpu_time``,
    ``limits_pin``; docs/machine.md), one line each."""
    layout = layout or hierarchies()
    lines = {}
    version, where = layout.where("memory")
    if not version:
        lines["memory"] = "cannot enforce memory here: " + where
    elif version == "v1":
        swap = os.path.exists(where + "/memory.memsw.limit_in_bytes")
        lines["memory"] = "cgroup v1 memory.limit_in_bytes" + (
            " + memory.memsw.limit_in_bytes (swap capped)"
            if swap
            else " (swap not capped: swap accounting is off; a trial may swap, not fail)"
        )
    else:
        lines["memory"] = "cgroup v2 memory.max + memory.swap.max 0 (where swap is accounted)"
    with contextlib.suppress(OSError, ValueError, KeyError):
        meminfo = dict(line.split(":", 1) for line in _read("/proc/meminfo").splitlines())
        if int(meminfo["SwapTotal"].split()[0]) == 0:
            lines["memory"] += "; this host has no swap"
    version, where = layout.where("cpuacct")
    lines["cpu_time"] = (
        f"cgroup {version} CPU accounting watched, RLIMIT_CPU backstop"
        if version
        else "cannot enforce CPU time here: " + where
    )
    version, where = layout.where("cpuset")
    lines["pin"] = "sched_setaffinity" + (f" + cgroup {version} cpuset" if version else "")
    return {"limits_" + k: v for k, v in lines.items()}
