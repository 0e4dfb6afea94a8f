"""A trial's limits in cgroups: the per-trial cgroups that cap its memory, pin its CPUs and
count its CPU time (docs/machine.md, "How each backend applies the limits").

Standard library only, and Python >= 3.8 without ``from __future__`` imports: the SSH agent
is sent to a host as this file followed by ssh_agent.py, so the remote agent applies the same
limits as the local backend.

Per trial with limits, one cgroup is made under the cgroup this process is in, in every
hierarchy a limit needs, named ``benchlang-PID-tN``; the trial's command joins them before it
execs (the launcher's child, or a ``/bin/sh`` prologue) and they are removed after the trial.

- memory: cgroup v1 ``memory.limit_in_bytes`` with ``memory.memsw.limit_in_bytes`` equal to
  it (no swap beyond the limit), else v2 ``memory.max`` with ``memory.swap.max`` 0
  (Documentation/admin-guide/cgroup-v1/memory.rst §2.4, cgroup-v2.rst "Memory"). Where swap
  cannot be capped, ``swap_note`` says so: a trial that swaps is then slow, not "out of
  memory". The peak (v1 ``memory.max_usage_in_bytes``, v2 ``memory.peak``) and the OOM
  killer's kills (v1 ``memory.oom_control`` ``oom_kill``, v2 ``memory.events``) are read after
  the trial.
- CPUs: ``sched_setaffinity`` in the child (inherited by every process of the trial), and a
  cpuset cgroup where one can be made (the command cannot then widen its own affinity).
- CPU time: the cgroup's CPU accounting (v1 ``cpuacct.usage`` in ns, v2 ``cpu.stat``
  ``usage_usec``) watched while the trial runs and enforced by a kill, with ``RLIMIT_CPU``
  per process as a backstop. Never a bandwidth quota (``cpu.cfs_quota_us``, ``cpu.max``): it
  throttles the trial and inflates the times being measured; only ``cpu_quota`` sets one, and
  then the throttling is read (v1 ``cpu.stat`` ``nr_throttled``/``throttled_time`` ns, v2
  ``nr_throttled``/``throttled_usec``).
"""

import contextlib
import errno
import itertools
import math
import os
import signal
import time

CFS_PERIOD_US = 100000
WATCH_FLOOR = 0.005
"""Shortest pause between two readings of a trial's CPU time (s): a CPU-time kill comes at
most this long times the trial's CPUs after the limit."""


class LimitError(Exception):
    """A limit the spec asks for cannot be enforced on this host (the message says why)."""


def _read(path):
    with open(path) as handle:
        return handle.read()


def _write(path, text):
    with open(path, "w") as handle:
        handle.write(text)


def _stat_field(text, name):
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return int(value)
    return None


class Hierarchies:
    """Where this process sits in each cgroup hierarchy: ``v1`` maps a controller (memory,
    cpuset, cpuacct, cpu) to this process's directory in it; ``v2`` is its cgroup v2
    directory (None without one) and ``v2_controllers`` what that directory offers."""

    def __init__(self, proc_cgroup=None, mountinfo=None):
        own_v1, own_v2 = {}, None
        for line in (proc_cgroup or _read("/proc/self/cgroup")).splitlines():
            number, _, rest = line.partition(":")
            names, _, path = rest.partition(":")
            if number == "0" and not names:
                own_v2 = path
            for name in names.split(","):
                if name:
                    own_v1[name] = path
        self.v1 = {}
        self.v2 = None
        for line in (mountinfo or _read("/proc/self/mountinfo")).splitlines():
            left, _, right = line.partition(" - ")
            fields, kind = left.split(), right.split(" ")
            if len(fields) < 5 or len(kind) < 3:
                continue
            root, mount = fields[3], fields[4]
            if kind[0] == "cgroup2" and own_v2 is not None and self.v2 is None:
                self.v2 = _below(mount, root, own_v2)
            elif kind[0] == "cgroup":
                for option in kind[2].split(","):
                    if option in own_v1 and option not in self.v1:
                        self.v1[option] = _below(mount, root, own_v1[option])
        self.v2_controllers = ()
        if self.v2 is not None:
            with contextlib.suppress(OSError):
                self.v2_controllers = tuple(_read(self.v2 + "/cgroup.controllers").split())

    def where(self, controller):
        """("v1", dir) or ("v2", dir) for a controller, or ("", why there is none)."""
        if controller in self.v1:
            return "v1", self.v1[controller]
        if self.v2 is not None and (controller in self.v2_controllers or controller == "cpuacct"):
            return "v2", self.v2  # v2 counts every cgroup's CPU time without a controller
        offered = ", ".join(self.v2_controllers) or "none"
        if self.v2 is None:
            return "", f"no cgroup v1 {controller} hierarchy and no cgroup v2"
        return "", f"no cgroup v1 {controller} hierarchy; cgroup v2 at {self.v2} offers: {offered}"


def _below(mount, root, path):
    relative = os.path.relpath(path, root) if root != "/" else path.lstrip("/")
    return os.path.normpath(os.path.join(mount, relative))


_LAYOUT: list[Hierarchies] = []
_COUNT = itertools.count(1)


def hierarchies():
    """This process's cgroup layout, read once; stale trial cgroups of gone processes are
    removed the first time."""
    if not _LAYOUT:
        found = Hierarchies()
        for parent in {*found.v1.values(), *([found.v2] if found.v2 else [])}:
            _remove_stale(parent)
        _LAYOUT.append(found)
    return _LAYOUT[0]


def owner_of(name):
    """The process a benchlang cgroup's name says made it (``benchlang-PID-N``, the local
    session's; ``benchlang-PID-tN``, a trial's limits; ``benchlang-agent-PID``, the SSH
    agent's), or None for any other name."""
    parts = name.split("-")
    if len(parts) != 3 or parts[0] != "benchlang":
        return None
    if parts[1] == "agent":
        pid = parts[2]
    elif parts[2].isdigit() or (parts[2][:1] == "t" and parts[2][1:].isdigit()):
        pid = parts[1]
    else:
        return None
    return int(pid) if pid.isdigit() else None


def is_stale(path):
    """Whether ``path`` is a benchlang cgroup whose owning process is gone: a run killed with
    SIGKILL cannot remove its own. One whose members include processes of another PID
    namespace (listed as 0 in ``cgroup.procs``) is another container's, and kept."""
    pid = owner_of(os.path.basename(path))
    if pid is None or os.path.exists(f"/proc/{pid}"):
        return False
    with contextlib.suppress(OSError):
        if "0" in _read(os.path.join(path, "cgroup.procs")).split():
            return False
    return True


def _remove_tree(path):
    """Remove a cgroup and the cgroups below it, deepest first; True when it is gone."""
    with contextlib.suppress(OSError):
        for name in os.listdir(path):
            below = os.path.join(path, name)
            if os.path.isdir(below) and not os.path.islink(below):
                _remove_tree(below)
    _remove_dir(path)
    return not os.path.exists(path)


def removal_lines(removed, failed=()):
    """What to say about the stale cgroups removed (and those that could not be)."""
    lines = []
    if removed:
        shown = ", ".join(removed[:3]) + (f" and {len(removed) - 3} more" if removed[3:] else "")
        lines.append(
            f"benchlang: removed {len(removed)} stale cgroup{'' if len(removed) == 1 else 's'} "
            f"of killed runs (their process is gone): {shown}"
        )
    lines += [f"benchlang: cannot remove the stale cgroup {path}" for path in failed]
    return lines


def say_removed(removed, failed=()):
    """``removal_lines`` on stderr."""
    import sys

    for line in removal_lines(removed, failed):
        sys.stderr.write(line + "\n")


def _remove_stale(parent, say=True):
    """Remove the stale cgroups of this host's killed local runs in ``parent`` (``is_stale``),
    killing what is left in them; say so on stderr. Returns the paths removed. An SSH agent's
    (``benchlang-agent-PID``) is the agent's to remove when it next starts on that host
    (agent_host.py), or ``benchlang system clean``'s: a local run on a machine that is also
    an SSH host would otherwise report another backend's leftovers as its own."""
    removed, failed = [], []
    if not os.access(str(parent), os.W_OK):  # a read-only view (a sandbox's): nothing to judge
        return removed
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(parent)):
            path = os.path.join(str(parent), name)
            if name.startswith("benchlang-agent-"):
                continue
            if owner_of(name) is not None and is_stale(path):
                (removed if _remove_tree(path) else failed).append(path)
    if say:
        say_removed(removed, failed)
    return removed


def cgroup_mounts(mountinfo=None):
    """The mount points of every cgroup v1 hierarchy and of cgroup v2 on this host."""
    found = []
    for line in (mountinfo or _read("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, kind = left.split(), right.split(" ")
        if len(fields) >= 5 and kind[0] in ("cgroup", "cgroup2") and fields[4] not in found:
            found.append(fields[4])
    return found


def remove_stale_everywhere(roots=None, depth=12):
    """``benchlang system clean``: the stale benchlang cgroups anywhere below ``roots`` (every
    cgroup mount), wherever the killed run sat, removed. Returns (removed, failed) paths."""
    removed, failed = [], []
    for root in roots if roots is not None else cgroup_mounts():
        base = root.rstrip("/").count("/")
        for top, dirs, _ in os.walk(root):
            ours = [d for d in dirs if owner_of(d) is not None]
            dirs[:] = [] if top.count("/") - base >= depth else [d for d in dirs if d not in ours]
            for name in ours:
                path = os.path.join(top, name)
                if is_stale(path):
                    (removed if _remove_tree(path) else failed).append(path)
    return removed, failed


def _kill_members(path):
    with contextlib.suppress(OSError):
        for pid in _read(path + "/cgroup.procs").split():
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)


def _remove_dir(path, within=5.0):
    """Kill what is left in a trial cgroup and remove it (rmdir fails while it has members)."""
    deadline = time.monotonic() + within
    while True:
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError as err:
            if err.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                return  # not ours to remove: a read-only view, or another user's
            if time.monotonic() > deadline:
                return
            _kill_members(path)
            time.sleep(0.002)


class TrialLimits:
    """One trial's cgroups for ``cpus`` (a tuple of CPU numbers), ``memory`` (bytes),
    ``cpu_time`` (s) and ``cpu_quota`` (CPUs). ``create`` makes them (LimitError when a
    memory, CPU-time or quota limit cannot be enforced); ``joins`` are the ``cgroup.procs``
    files the command enters before exec, ``cgroup2`` its v2 cgroup (the launcher's clone
    target); ``finish`` reads what happened and removes them."""

    def __init__(self, cpus=(), memory=None, cpu_time=None, cpu_quota=None):
        self.cpus = tuple(int(c) for c in cpus)
        self.memory = memory
        self.cpu_time = cpu_time
        self.cpu_quota = cpu_quota
        self.dirs = []
        self.joins = []
        self.cgroup2 = None
        self.memory_dir = None
        self.usage = None
        self.quota_dir = None
        self.swap_note = None
        self.cpuset_note = None

    def create(self, layout=None):
        """Make the trial's cgroups; LimitError (nothing left behind) when one cannot be."""
        layout = layout or hierarchies()
        self.name = f"benchlang-{os.getpid()}-t{next(_COUNT)}"  # next(): one per thread
        try:
            if self.memory is not None:
                self._memory(layout)
            if self.cpu_time is not None:
                self._accounting(layout)
            if self.cpu_quota is not None:
                self._quota(layout)
            if self.cpus:
                try:
                    self._cpuset(layout)
                except LimitError as err:  # affinity still pins; the cpuset only holds it
                    self.cpuset_note = str(err)
        except BaseException:
            self.remove()
            raise
        return self

    def _dir(self, version, parent, what):
        if version == "v2" and self.cgroup2 is not None:
            return self.cgroup2
        path = os.path.join(parent, self.name)
        try:
            os.mkdir(path)
        except OSError as err:
            raise LimitError(
                f"cannot enforce {what} here: cannot create a cgroup under {parent}: {err.strerror or err}"
            ) from None
        self.dirs.append(path)
        if version == "v2":
            self.cgroup2 = path
        else:
            self.joins.append(path + "/cgroup.procs")
        return path

    def _enable_v2(self, layout, controller, what):
        control = layout.v2 + "/cgroup.subtree_control"
        try:
            if controller not in _read(control).split():
                _write(control, "+" + controller)
        except OSError as err:
            raise LimitError(
                f"cannot enforce {what} here: cgroup v2 {layout.v2} cannot give its children the {controller} "
                f"controller: {err.strerror or err}"
            ) from None

    def _set(self, path, text, what):
        try:
            _write(path, text)
        except OSError as err:
            raise LimitError(
                f"cannot enforce {what} here: writing {text} to {path}: {err.strerror or err}"
            ) from None

    def _memory(self, layout):
        what = "memory"
        version, parent = layout.where("memory")
        if not version:
            raise LimitError("cannot enforce memory here: " + parent)
        if version == "v2":
            self._enable_v2(layout, "memory", what)
        path = self._dir(version, parent, what)
        self.memory_dir = (version, path)
        limit = str(int(self.memory))
        if version == "v1":
            self._set(path + "/memory.limit_in_bytes", limit, what)
            swap = path + "/memory.memsw.limit_in_bytes"
            if os.path.exists(swap):
                self._set(swap, limit, what)
            else:
                self.swap_note = "swap accounting is off (no memory.memsw.*): swap is not capped"
        else:
            self._set(path + "/memory.max", limit, what)
            if os.path.exists(path + "/memory.swap.max"):
                self._set(path + "/memory.swap.max", "0", what)
            else:
                self.swap_note = "no memory.swap.max (swap accounting off): swap is not capped"

    def _accounting(self, layout):
        version, parent = layout.where("cpuacct")
        if not version:
            raise LimitError("cannot enforce CPU time here: " + parent)
        path = self._dir(version, parent, "CPU time")
        self.usage = (version, path + ("/cpuacct.usage" if version == "v1" else "/cpu.stat"))

    def _quota(self, layout):
        what = "a CPU quota"
        version, parent = layout.where("cpu")
        if not version:
            raise LimitError("cannot enforce a CPU quota here: " + parent)
        if version == "v2":
            self._enable_v2(layout, "cpu", what)
        path = self._dir(version, parent, what)
        quota = max(1000, round(self.cpu_quota * CFS_PERIOD_US))
        if version == "v1":
            self._set(path + "/cpu.cfs_period_us", str(CFS_PERIOD_US), what)
            self._set(path + "/cpu.cfs_quota_us", str(quota), what)
        else:
            self._set(path + "/cpu.max", f"{quota} {CFS_PERIOD_US}", what)
        self.quota_dir = (version, path)

    def _cpuset(self, layout):
        what = "CPUs by a cpuset"
        version, parent = layout.where("cpuset")
        if not version:
            raise LimitError(parent)
        if version == "v2":
            self._enable_v2(layout, "cpuset", what)
        path = self._dir(version, parent, what)
        try:
            if version == "v1":
                self._set(path + "/cpuset.mems", _read(parent + "/cpuset.mems").strip(), what)
            self._set(path + "/cpuset.cpus", ",".join(map(str, self.cpus)), what)
        except (OSError, LimitError) as err:
            if version == "v1":  # not joined: the command would fail to enter it
                self.joins.remove(path + "/cgroup.procs")
                self.dirs.remove(path)
                _remove_dir(path)
            raise LimitError(str(err)) from None

    # -- while the trial runs ----------------------------------------------------------------

    def cpu_used(self):
        """The trial's CPU time so far (s), from its cgroup's accounting; None without one."""
        if self.usage is None:
            return None
        version, path = self.usage
        try:
            text = _read(path)
        except OSError:
            return None
        if version == "v1":
            return int(text) / 1e9
        used = _stat_field(text, "usage_usec")
        return None if used is None else used / 1e6

    def next_check(self):
        """Seconds until the CPU-time limit could first be reached (every allowed CPU busy),
        so the watch wakes rarely; None without a CPU-time limit."""
        if self.cpu_time is None:
            return None
        used = self.cpu_used() or 0.0
        width = len(self.cpus) or os.cpu_count() or 1
        return max(WATCH_FLOOR, (self.cpu_time - used) / width)

    def exceeded(self):
        used = self.cpu_used()
        return self.cpu_time is not None and used is not None and used >= self.cpu_time

    def rlimit_cpu(self):
        """RLIMIT_CPU for every process (the backstop): the limit rounded up, plus a second."""
        return None if self.cpu_time is None else math.ceil(self.cpu_time) + 1

    # -- how the command enters them ---------------------------------------------------------

    def launcher_field(self):
        """The launcher's ``limits`` request field (launcher.c, "Limits")."""
        lines = []
        if self.cpus:
            lines.append("cpus " + ",".join(map(str, self.cpus)))
        lines += ["join " + path for path in self.joins]
        if self.cgroup2 is not None:
            lines.append("cgroup2 " + self.cgroup2)
        if self.cpu_time is not None:
            lines.append(f"rlimit_cpu {self.rlimit_cpu()}")
            if self.usage is not None:
                lines.append(f"cpu_limit {float(self.cpu_time)!r}")
                lines.append(f"usage_{self.usage[0]} {self.usage[1]}")
                lines.append(f"width {len(self.cpus) or os.cpu_count() or 1}")
        return "\n".join(lines)

    def prologue(self, argv):
        """``argv`` behind a ``/bin/sh`` prologue that enters the trial's cgroups and sets
        RLIMIT_CPU before it execs (for spawners that cannot run code in the child)."""
        joins = list(self.joins) + ([self.cgroup2 + "/cgroup.procs"] if self.cgroup2 else [])
        if not joins and self.cpu_time is None:
            return list(argv)
        script = (
            'while [ "$1" != -- ]; do echo 0 > "$1" || { echo "benchlang: cannot enter the '
            "trial's cgroup $1\" >&2; exit 126; }; shift; done; shift; "
        )
        if self.cpu_time is not None:
            script += f"ulimit -t {self.rlimit_cpu()} || exit 126; "
        return ["/bin/sh", "-c", script + 'exec "$@"', "benchlang-limits", *joins, "--", *argv]

    @contextlib.contextmanager
    def pinned(self):
        """The calling thread pinned to the trial's CPUs while a child is spawned from it
        (affinity is inherited), then restored."""
        if not self.cpus:
            yield
            return
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, self.cpus)
        try:
            yield
        finally:
            os.sched_setaffinity(0, before)

    # -- after the trial ---------------------------------------------------------------------

    def finish(self):
        """What the cgroups saw, then removed: (measures, unavailable, oom_kills, cpu_used).
        ``memory_peak`` in KiB, like ``max_rss``; throttling only under a quota."""
        measures, unavailable = {}, {}
        oom_kills = 0
        cpu_used = self.cpu_used()
        try:
            if self.memory_dir is not None:
                version, path = self.memory_dir
                peak = "/memory.max_usage_in_bytes" if version == "v1" else "/memory.peak"
                try:
                    measures["memory_peak"] = int(_read(path + peak)) / 1024.0
                except (OSError, ValueError) as err:
                    unavailable["memory_peak"] = f"cannot read {path}{peak}: {err}"
                events = "/memory.oom_control" if version == "v1" else "/memory.events"
                with contextlib.suppress(OSError):
                    oom_kills = _stat_field(_read(path + events), "oom_kill") or 0
            else:
                unavailable["memory_peak"] = "no memory limit: the trial has no memory cgroup"
            if self.quota_dir is not None:
                version, path = self.quota_dir
                with contextlib.suppress(OSError):
                    text = _read(path + "/cpu.stat")
                    field, scale = (
                        ("throttled_time", 1e9)
                        if version == "v1"
                        else (
                            "throttled_usec",
                            1e6,
                        )
                    )
                    measures["throttled_periods"] = float(_stat_field(text, "nr_throttled") or 0)
                    measures["throttled_time"] = (_stat_field(text, field) or 0) / scale
            else:
                why = "no CPU quota: the trial's cgroup did not throttle it"
                unavailable["throttled_periods"] = unavailable["throttled_time"] = why
        finally:
            self.remove()
        return measures, unavailable, oom_kills, cpu_used

    def remove(self):
        for path in reversed(self.dirs):
            _remove_dir(path)
        self.dirs = []
