"""The ``machine { ... }`` block: the limits every trial runs under and the host state a run
requires (docs/machine.md), checked into ``model.Machine``.

Why each key exists: pyperf's ``system tune`` documents the knobs that disturb timings
(governor, turbo, SMT, ASLR); BenchExec (Beyer et al., "Reliable benchmarking: requirements
and solutions", STTT 21(1), 2019, §3-4) pins runs to cores and limits memory and CPU time per
run in cgroups, and measures CPU time rather than throttling it. DataMill (de Oliveira et al.,
ICPE 2013, §3) varies address randomisation on purpose, so a block that fixes it beside a
hidden ``aslr`` factor contradicts the design.
"""

from __future__ import annotations

import os
from typing import Any

from benchlang import model
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context
from benchlang.lang.diagnostics import Span
from benchlang.lang.machine_text import cpu_ranges, format_bytes
from benchlang.lang.outside import check_readable

MEMORY_FLOOR = 4 * 2**20
"""The smallest memory limit accepted: a shell and a small program need a few MiB."""
GOVERNORS = ("performance", "powersave", "ondemand", "conservative", "schedutil", "userspace")
"""cpufreq's governors (Linux Documentation/admin-guide/pm/cpufreq.rst)."""
REQUIRED = ("governor", "turbo", "smt", "aslr")
"""Host-state keys, in the order the record states them."""
CAPABILITY = {"cpus": "pin", "memory": "memory", "time": "cpu_time", "cpu_quota": "cpu_time"}
"""The backend capability each limit needs (backends/base.CAPABILITIES)."""
_BYTES = {unit: int(f) for unit, (f, dim) in model.QUANTITY_UNITS.items() if dim == "bytes"}
_BYTES["kB"] = 1000


def _cpus(value: ast.Value) -> tuple[int, ...]:
    example = "cpus [2, 3] or cpus 0..3"
    if value.kind == "int":
        raise s.Invalid(
            "a bare number is ambiguous: a CPU or a count of CPUs",
            f"list the CPUs to pin to: cpus [{value.value}]; {example}",
        )
    if value.kind == "range" and all(isinstance(x, int) for x in value.value if x is not None):
        start, stop, step = value.value
        cpus = list(range(start, stop + 1, step or 1))
    elif value.kind == "list" and all(v.kind == "int" for v in value.value):
        cpus = [int(v.value) for v in value.value]
    else:
        raise s.Invalid(f"expected CPU numbers, got {value.describe()}", example)
    if not cpus:
        raise s.Invalid("no CPU listed", example)
    if min(cpus) < 0:
        raise s.Invalid(f"CPU {min(cpus)} is negative", "CPUs are numbered from 0")
    twice = sorted({c for c in cpus if cpus.count(c) > 1})
    if twice:
        raise s.Invalid(f"CPU {twice[0]} is listed twice")
    return tuple(sorted(cpus))


def _memory(value: ast.Value) -> int:
    hint = "write a unit: memory 1GiB (KiB, MiB, GiB, TiB, or kB, MB, GB, TB)"
    if value.kind in ("int", "float"):
        raise s.Invalid(f"{value.value:g} has no unit", hint)
    if value.kind != "quantity" or value.value[1] not in _BYTES:
        shown = f"{value.value[0]:g}{value.value[1]}" if value.kind == "quantity" else None
        raise s.Invalid(f"expected a memory size, got {shown or value.describe()}", hint)
    number, unit = value.value
    size = int(number * _BYTES[unit])
    if size < MEMORY_FLOOR:
        raise s.Invalid(
            f"{number:g}{unit} is below {format_bytes(MEMORY_FLOOR)}",
            f"a trial's shell alone needs a few MiB; at least memory {MEMORY_FLOOR >> 20}MiB",
        )
    return size


def _positive_duration(value: ast.Value) -> float:
    seconds = s.duration(value)
    if seconds <= 0:
        raise s.Invalid("a CPU-time limit must be above zero")
    return seconds


def _quota(value: ast.Value) -> float:
    quota = s.number(None, None)(value)
    if quota <= 0:
        raise s.Invalid(f"cpu_quota {quota:g} is not above zero", "cpu_quota 1.5 allows 1.5 CPUs")
    return quota


_ON_OFF = s.choice("on", "off")
SCHEMA: dict[str, s.Validator] = {
    "cpus": _cpus,
    "memory": _memory,
    "time": _positive_duration,
    "cpu_quota": _quota,
    "governor": s.choice(*GOVERNORS),
    "turbo": _ON_OFF,
    "smt": _ON_OFF,
    "aslr": _ON_OFF,
}


def _checked(ctx: Context, settings: ast.Settings | None, where: str) -> s.Checked:
    return s.check_settings(settings, SCHEMA, where, ctx.diagnostics)


def check_machine(
    ctx: Context,
    blocks: list[ast.Block],
    hosts_node: ast.Hosts | None,
    hosts: model.Hosts,
    hidden: list[model.Hidden],
) -> model.Machine | None:
    """The machine of the top-level block refined key by key by the ``hosts`` block's own
    ``machine { ... }``; None when neither is written."""
    top = ctx.single(blocks, "'machine'")
    inner = [i for i in (hosts_node.settings.items if hosts_node and hosts_node.settings else ())]
    inner = [i for i in inner if i.key == "machine"]
    nested = ctx.single(inner, f"'machine' in hosts {hosts.kind}")
    if top is None and nested is None:
        return None
    values: dict[str, Any] = {}
    spans: dict[str, Span] = {}
    if top is not None:
        checked = _checked(ctx, top.settings, "machine")
        values.update(checked.values)
        spans.update({k: checked.spans[k] for k in checked.values})
    if nested is not None:
        if nested.block is None or nested.value is not None:
            ctx.error(
                f"'machine' in hosts {hosts.kind} is a block",
                nested.span,
                "machine { cpus [2, 3] memory 1GiB }",
            )
        else:
            checked = _checked(ctx, nested.block, f"machine of hosts {hosts.kind}")
            values.update(checked.values)
            spans.update({k: checked.spans[k] for k in checked.values})
    _check_capabilities(ctx, hosts, values, spans)
    if "cpus" in values:
        written = [
            i
            for b in (top.settings if top else None, nested and nested.block)
            if b
            for i in b.items
            if i.key == "cpus" and i.value is not None
        ]
        _check_cpus_exist(ctx, hosts, values["cpus"], written[-1].value)
    if values.get("aslr") == "off" and any(h.kind == "aslr" for h in hidden):
        ctx.error(
            "aslr off fixes address-space randomisation, which the hidden factor aslr varies "
            "on purpose (DataMill, de Oliveira et al. ICPE 2013)",
            spans["aslr"],
            "keep one: drop 'aslr off' to vary it, or drop the hidden factor to fix it",
        )
    return model.Machine(
        cpus=values.get("cpus", ()),
        memory=values.get("memory"),
        cpu_time=values.get("time"),
        cpu_quota=values.get("cpu_quota"),
        require=tuple((k, values[k]) for k in REQUIRED if k in values),
    )


def _capabilities(backend: Any) -> frozenset[str]:
    declared = frozenset(getattr(backend, "capabilities", ()))
    return declared | ({"reboot"} if getattr(backend, "supports_reboot", False) else set())


def _check_capabilities(
    ctx: Context, hosts: model.Hosts, values: dict[str, Any], spans: dict[str, Span]
) -> None:
    """A limit the backend cannot apply is refused here, never claimed in the record."""
    backend = (ctx.backends or {}).get(hosts.kind)
    if backend is None:
        return
    have = _capabilities(backend)
    for key, capability in CAPABILITY.items():
        if key in values and capability not in have:
            able = sorted(
                k for k, b in (ctx.backends or {}).items() if capability in _capabilities(b)
            )
            ctx.error(
                f"hosts {hosts.kind} cannot apply '{key}': the backend lacks the "
                f"'{capability}' capability",
                spans[key],
                f"backends that can: {', '.join(able)}"
                if able
                else f"no installed backend declares '{capability}' (docs/machine.md)",
            )


def _cpu_span(value: ast.Value, cpu: int) -> Span:
    """Where ``cpu`` is written in a list of CPUs (the whole value for a range)."""
    if value.kind == "list":
        return next((v.span for v in value.value if v.value == cpu), value.span)
    return value.span


def _check_cpus_exist(
    ctx: Context, hosts: model.Hosts, cpus: tuple[int, ...], value: ast.Value
) -> None:
    """CPUs of a known host: this machine for ``hosts local`` (the CPUs this process may
    use, sched_getaffinity(2)), else each host's ``cores`` in a declared facts file."""
    if hosts.kind == "local":
        online = os.cpu_count() or 0
        allowed = set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
        allowed = allowed if allowed is not None else set(range(online))
        for cpu in cpus:
            if cpu not in allowed:
                what = "does not exist on this host" if cpu >= online else "is not usable here"
                ctx.error(
                    f"CPU {cpu} {what}",
                    _cpu_span(value, cpu),
                    f"this host's usable CPUs: {cpu_ranges(allowed)} (of {online})",
                )
                return
        return
    for host, count in _declared_cores(ctx, hosts).items():
        missing = [c for c in cpus if c >= count]
        if missing:
            ctx.error(
                f"CPU {missing[0]} does not exist on host {host}",
                _cpu_span(value, missing[0]),
                f"its declared facts give {count} CPUs: 0-{count - 1}",
            )
            return


def _declared_cores(ctx: Context, hosts: model.Hosts) -> dict[str, int]:
    """``cores`` of each host in the ``facts from file`` JSON, where it is a number (a file
    that cannot be read is the backend's diagnostic, not this one's)."""
    facts = hosts.settings.get("facts") if hosts.settings else None
    if not (isinstance(facts, dict) and isinstance(facts.get("file"), str)):
        return {}
    import json  # a spec with declared facts only

    try:
        check_readable(facts["file"])
        with open(facts["file"], encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError):
        return {}
    out = {}
    for host, values in document.items() if isinstance(document, dict) else ():
        cores = values.get("cores") if isinstance(values, dict) else None
        if str(cores).isdigit():
            out[str(host)] = int(str(cores))
    return out
