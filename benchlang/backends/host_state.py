"""The host state that disturbs measurements, read by one POSIX sh script run through a
``HostSession`` (so the same probe serves this machine and hosts over SSH), and the writes of
``benchlang system tune``.

What is read, and why (docs/machine.md): the items pyperf's ``system show`` checks (cpufreq
governor and frequency range, turbo/boost, isolated CPUs and ``nohz_full``, ASLR,
perf_event_paranoid, load and the processes using CPU), SMT, swap, thermal throttling counters
(x86 ``thermal_throttle``), virtualisation and the cgroup layout BenchExec needs to limit a
run (Beyer et al., STTT 21(1), 2019, §4). Paths are Linux's sysfs/procfs ABI
(Documentation/ABI, admin-guide/pm/cpufreq.rst, intel_pstate.rst, sysctl/kernel.rst). A knob
whose file is absent is "not available on this host", never a guessed value.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

import attrs

from benchlang.backends.base import Command, HostSession
from benchlang.lang.machine_text import cpu_ranges, parse_cpu_list

NOT_AVAILABLE = "not available on this host"
CPU = "/sys/devices/system/cpu"

PROBE = r"""
c=/sys/devices/system/cpu
say() { printf '%s\t%s\n' "$1" "$2"; }
val() { [ -r "$2" ] && v= && { IFS= read -r v < "$2" || [ -n "$v" ]; } && say "$1" "$v"; }
say uid "$(id -u 2>/dev/null)"
for f in $c/cpu[0-9]*/cpufreq/scaling_governor; do val governor "$f"; done
for f in $c/cpu[0-9]*/cpufreq/scaling_available_governors; do val governors "$f"; break; done
val freq_min $c/cpu0/cpufreq/cpuinfo_min_freq
val freq_max $c/cpu0/cpufreq/cpuinfo_max_freq
val no_turbo $c/intel_pstate/no_turbo
val boost $c/cpufreq/boost
val smt $c/smt/control
val online $c/online
val isolated $c/isolated
val nohz_full $c/nohz_full
val aslr /proc/sys/kernel/randomize_va_space
val perf_event_paranoid /proc/sys/kernel/perf_event_paranoid
val loadavg /proc/loadavg
if [ -r /proc/swaps ]; then
  n=-1; while IFS= read -r line; do n=$((n + 1)); done < /proc/swaps; say swaps "$n"
fi
if [ -r /proc/meminfo ]; then
  while read -r key size rest; do
    [ "$key" = SwapTotal: ] && say swap_total "$size" && break
  done < /proc/meminfo
fi
for f in $c/cpu[0-9]*/thermal_throttle/core_throttle_count \
         $c/cpu[0-9]*/thermal_throttle/package_throttle_count; do val throttle "$f"; done
if command -v systemd-detect-virt >/dev/null 2>&1; then
  say virt "$(systemd-detect-virt 2>/dev/null)"
fi
[ -r /proc/cpuinfo ] && say hypervisor_flag "$(grep -c '^flags.* hypervisor' /proc/cpuinfo)"
val dmi_vendor /sys/class/dmi/id/sys_vendor
val dmi_product /sys/class/dmi/id/product_name
if [ -r /sys/fs/cgroup/cgroup.controllers ]; then
  say cgroup v2
  val cgroup_controllers /sys/fs/cgroup/cgroup.controllers
  [ -w /sys/fs/cgroup/cgroup.subtree_control ] && say cgroup_writable all
elif [ -d /sys/fs/cgroup ]; then
  say cgroup v1
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    [ -f "$d/tasks" ] || continue
    say cgroup_controllers "${d##*/}"
    [ -w "$d" ] && say cgroup_writable "${d##*/}"
  done
fi
if command -v ps >/dev/null 2>&1; then
  ps -eo pcpu=,pid=,comm= --sort=-pcpu 2>/dev/null | head -n 5 | while read -r p i n; do
    say process "$p $i $n"
  done
fi
"""


@attrs.frozen
class HostState:
    """What the probe read on one host; None where the knob does not exist there.

    ``turbo``/``smt``/``aslr`` are "on" or "off" (``smt_control`` and ``aslr_level`` keep the
    kernel's words: ``notsupported``, 0/1/2); ``throttle`` sums the thermal throttling
    counters; ``processes`` are (%CPU over each process's life, pid, name), highest first;
    ``cgroup_writable`` names the controllers this user may create groups in."""

    host: str
    root: bool
    governors: tuple[str, ...] = ()
    available_governors: tuple[str, ...] = ()
    freq_min_khz: int | None = None
    freq_max_khz: int | None = None
    turbo: str | None = None
    turbo_source: str | None = None
    smt: str | None = None
    smt_control: str | None = None
    online: tuple[int, ...] = ()
    isolated: tuple[int, ...] | None = None
    nohz_full: tuple[int, ...] | None = None
    aslr: str | None = None
    aslr_level: int | None = None
    perf_event_paranoid: int | None = None
    load: tuple[float, float, float] | None = None
    swap_devices: int | None = None
    swap_total_kib: int | None = None
    throttle: int | None = None
    virtualization: str | None = None
    cgroup: str | None = None
    cgroup_controllers: tuple[str, ...] = ()
    cgroup_writable: tuple[str, ...] = ()
    processes: tuple[tuple[float, int, str], ...] = ()

    @property
    def governor(self) -> str | None:
        """The governor of every CPU, or their distinct values joined by "/" (None: no cpufreq)."""
        return "/".join(self.governors) if self.governors else None

    def value_of(self, knob: str) -> str | None:
        """The state a ``machine`` block's requirement reads (governor, turbo, smt, aslr)."""
        return {"governor": self.governor, "turbo": self.turbo, "smt": self.smt}.get(
            knob, self.aslr if knob == "aslr" else None
        )

    def items(self) -> list[tuple[str, str]]:
        """(item, text) for every item ``system show`` prints, NOT_AVAILABLE where absent."""

        def shown(value: Any) -> str:
            return NOT_AVAILABLE if value is None or value == () else str(value)

        freq = (
            f"{self.freq_min_khz // 1000}-{self.freq_max_khz // 1000} MHz"
            if self.freq_min_khz is not None and self.freq_max_khz is not None
            else None
        )
        aslr = None if self.aslr is None else f"{self.aslr} (randomize_va_space {self.aslr_level})"
        swap = None
        if self.swap_devices is not None:
            swap = (
                "off (no swap device)"
                if not self.swap_devices
                else f"{self.swap_devices} devices, {(self.swap_total_kib or 0) // 1024} MiB"
            )
        cgroup = None
        if self.cgroup is not None:
            writable = ", ".join(self.cgroup_writable) or "none"
            cgroup = f"{self.cgroup}; controllers {' '.join(self.cgroup_controllers) or '-'}; writable: {writable}"
        top = "; ".join(f"{n} (pid {p}) {c:g}%" for c, p, n in self.processes) or None
        return [
            ("governor", shown(self.governor)),
            ("frequency range", shown(freq)),
            ("turbo", shown(self.turbo and f"{self.turbo} ({self.turbo_source})")),
            ("smt", shown(self.smt and f"{self.smt} (control {self.smt_control})")),
            ("online CPUs", shown(cpu_ranges(self.online) or None)),
            ("isolated CPUs", shown(self._cpus(self.isolated))),
            ("nohz_full CPUs", shown(self._cpus(self.nohz_full))),
            ("aslr", shown(aslr)),
            ("swap", shown(swap)),
            ("load average", shown(self.load and " ".join(f"{x:g}" for x in self.load))),
            ("top processes (%CPU)", shown(top)),
            ("thermal throttling", shown(self.throttle and f"{self.throttle} events")),
            ("virtualization", shown(self.virtualization)),
            ("perf_event_paranoid", shown(self.perf_event_paranoid)),
            ("cgroups", shown(cgroup)),
        ]

    @staticmethod
    def _cpus(cpus: tuple[int, ...] | None) -> str | None:
        return None if cpus is None else (cpu_ranges(cpus) or "none")

    def to_dict(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["governor"] = self.governor
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HostState:
        """A stored state (``to_dict``) back; keys this version does not know are dropped."""
        names = {f.name for f in attrs.fields(cls)}
        kept = {k: v for k, v in data.items() if k in names}
        for key in (
            "governors",
            "available_governors",
            "online",
            "isolated",
            "nohz_full",
            "load",
            "cgroup_controllers",
            "cgroup_writable",
        ):
            if kept.get(key) is not None:
                kept[key] = tuple(kept[key])
        kept["processes"] = tuple(tuple(p) for p in kept.get("processes", ()))
        return cls(**kept)


def parse_probe(host: str, text: str) -> HostState:
    """The probe's ``key<TAB>value`` lines as a HostState."""
    seen: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, tab, value = line.partition("\t")
        if tab:
            seen.setdefault(key, []).append(value.strip())

    def one(key: str) -> str | None:
        return seen[key][0] if seen.get(key) else None

    def number(key: str) -> int | None:
        v = one(key)
        return int(v) if v is not None and v.lstrip("-").isdigit() else None

    def cpus(key: str) -> tuple[int, ...] | None:
        v = one(key)
        try:
            return None if v is None else parse_cpu_list(v)
        except ValueError:
            return None

    turbo = source = None
    if number("no_turbo") is not None:
        turbo, source = ("off" if number("no_turbo") else "on"), "intel_pstate/no_turbo"
    elif number("boost") is not None:
        turbo, source = ("on" if number("boost") else "off"), "cpufreq/boost"
    control = one("smt")
    smt = None  # a CPU without SMT (notsupported) runs one thread per core: off
    if control in ("on", "off", "forceoff", "notsupported"):
        smt = "on" if control == "on" else "off"
    aslr_level = number("aslr")
    load = None
    loadavg = one("loadavg")
    if loadavg:
        averages = [float(x) for x in loadavg.split()[:3]]
        if len(averages) == 3:
            load = (averages[0], averages[1], averages[2])
    throttles = [int(x) for x in seen.get("throttle", []) if x.isdigit()]
    processes = []
    for line in seen.get("process", []):
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1].isdigit():
            processes.append((float(parts[0]), int(parts[1]), parts[2]))
    virt = one("virt")
    if virt in (None, ""):
        flag = number("hypervisor_flag")
        virt = "a hypervisor (cpuinfo flag)" if flag else ("none" if flag == 0 else None)
    product = " ".join(x for x in (one("dmi_vendor"), one("dmi_product")) if x)
    if virt is not None and product:
        virt = f"{virt} ({product})"
    controllers = tuple(w for v in seen.get("cgroup_controllers", []) for w in v.split())
    writable = seen.get("cgroup_writable", [])
    if writable == ["all"]:
        writable = list(controllers)
    return HostState(
        host=host,
        root=one("uid") == "0",
        governors=tuple(sorted(set(seen.get("governor", [])))),
        available_governors=tuple((one("governors") or "").split()),
        freq_min_khz=number("freq_min"),
        freq_max_khz=number("freq_max"),
        turbo=turbo,
        turbo_source=source,
        smt=smt,
        smt_control=control,
        online=cpus("online") or (),
        isolated=cpus("isolated"),
        nohz_full=cpus("nohz_full"),
        aslr=None if aslr_level is None else ("off" if aslr_level == 0 else "on"),
        aslr_level=aslr_level,
        perf_event_paranoid=number("perf_event_paranoid"),
        load=load,
        swap_devices=number("swaps"),
        swap_total_kib=number("swap_total"),
        throttle=sum(throttles) if throttles else None,
        virtualization=virt,
        cgroup=one("cgroup"),
        cgroup_controllers=controllers,
        cgroup_writable=tuple(writable),
        processes=tuple(processes),
    )


async def probe(session: HostSession) -> HostState:
    """Run the probe on the session's host; a probe that cannot run raises OSError."""
    done = await session.execute(Command(PROBE, timeout=30.0))
    if done.exit_status != 0 and not done.stdout:
        why = done.stderr.decode(errors="replace").strip()[-200:]
        raise OSError(f"the host-state probe failed on {session.host}: {why or 'no output'}")
    return parse_probe(session.host, done.stdout.decode(errors="replace"))


@attrs.frozen
class Write:
    """One file ``tune`` writes: the knob, the path, the value to write."""

    knob: str
    path: str
    value: str


def writes_for(state: HostState, wanted: Mapping[str, str]) -> tuple[list[Write], list[str]]:
    """The files that bring ``state`` to ``wanted`` (knob -> "on"/"off" or a governor), and
    one line per knob that cannot be set here, with why."""
    writes: list[Write] = []
    lines: list[str] = []
    for knob, value in wanted.items():
        if state.value_of(knob) == value:
            continue
        if knob == "governor":
            if not state.governors:
                lines.append(f"governor: cannot set {value}: cpufreq is {NOT_AVAILABLE}")
                continue
            path = f"{CPU}/cpu*/cpufreq/scaling_governor"
            writes.append(Write(knob, path, value))
        elif knob == "turbo" and state.turbo_source is not None:
            on = value == "on"
            flag = (
                ("0" if on else "1") if "no_turbo" in state.turbo_source else ("1" if on else "0")
            )
            writes.append(Write(knob, f"{CPU}/{state.turbo_source}", flag))
        elif knob == "smt" and state.smt_control in ("on", "off"):
            writes.append(Write(knob, f"{CPU}/smt/control", value))
        elif knob == "aslr" and state.aslr_level is not None:
            writes.append(
                Write(knob, "/proc/sys/kernel/randomize_va_space", "2" if value == "on" else "0")
            )
        else:
            lines.append(f"{knob}: cannot set {value}: the knob is {NOT_AVAILABLE}")
    return writes, lines


def write_script(writes: list[Write]) -> str:
    """A sh script that writes each file (globs expanded on the host) and reports
    ``ok|fail<TAB>path<TAB>old value<TAB>error`` per file, the old value read first."""
    lines = []
    for w in writes:
        lines.append(
            f'for f in {w.path}; do old=$(cat "$f" 2>/dev/null); '
            f"if err=$( {{ printf '%s\\n' {shlex.quote(w.value)} > \"$f\"; }} 2>&1 ); "
            'then printf \'ok\\t%s\\t%s\\n\' "$f" "$old"; '
            'else printf \'fail\\t%s\\t%s\\t%s\\n\' "$f" "$old" "$err"; fi; done'
        )
    return "\n".join(lines) + "\n"


async def apply_writes(
    session: HostSession, writes: list[Write]
) -> list[tuple[str, str, str, str]]:
    """Run the writes on the host: (status, path, old value, error) per file written."""
    done = await session.execute(Command(write_script(writes), timeout=30.0))
    out = []
    for line in done.stdout.decode(errors="replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] in ("ok", "fail"):
            out.append((parts[0], parts[1], parts[2], parts[3] if len(parts) > 3 else ""))
    return out
