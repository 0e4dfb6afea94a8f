"""Hidden factors: what the checker accepts for ``factor NAME in LEVELS hidden { per round }``
and the built-ins ``factor env_padding|aslr|link_order|drop_caches hidden { ... }``.

Sources (docs/hidden-factors.md): DataMill (de Oliveira et al., ICPE 2013, §3) varies the
factors experimenters hold fixed by accident; environment size and link order change
performance (Mytkowicz et al., "Producing Wrong Data Without Doing Anything Obviously Wrong!",
ASPLOS 2009, §4); hyperfine pads the environment with a random-length variable
(``HYPERFINE_RANDOMIZED_ENVIRONMENT_OFFSET``, 0-4095 bytes); ``setarch -R`` turns address
space randomisation off (personality(2) ADDR_NO_RANDOMIZE); drop_caches is proc(5)'s
``/proc/sys/vm/drop_caches``.
"""

from __future__ import annotations

from typing import Any

from benchlang import model
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context
from benchlang.lang.diagnostics import did_you_mean

MAX_PADDING = 65536  # one environment string may hold 128 KiB (MAX_ARG_STRLEN)
DEFAULT_PADDING = tuple(range(0, 4097, 512))
_PER = {"per": s.choice("trial", "round")}


def _sizes(value: ast.Value) -> tuple[int, ...]:
    if value.kind == "range" and all(isinstance(x, int) for x in value.value if x is not None):
        start, stop, step = value.value
        sizes = tuple(range(start, stop + 1, step or 1))
    elif value.kind == "list" and value.value and all(v.kind == "int" for v in value.value):
        sizes = tuple(sorted({int(v.value) for v in value.value}))
    else:
        raise s.Invalid(
            f"expected a list or range of byte counts, got {value.describe()}",
            "sizes 0..4096 step 512",
        )
    if not sizes or sizes[0] < 0 or sizes[-1] > MAX_PADDING:
        raise s.Invalid(f"sizes must lie in 0..{MAX_PADDING} bytes")
    return sizes


def _objects(value: ast.Value) -> tuple[str, ...]:
    objects = s.strings(value)
    if len(objects) < 2 or len(set(objects)) != len(objects):
        raise s.Invalid("link_order needs at least two distinct objects")
    return objects


_SCHEMAS: dict[str, dict[str, Any]] = {
    "factor": _PER,
    "env_padding": {**_PER, "sizes": _sizes},
    "aslr": _PER,
    "link_order": {**_PER, "objects": _objects},
    "drop_caches": _PER,
    "reboot": {"per": s.choice("round")},
}


def check_hidden(
    ctx: Context, f: ast.Factor, levels: tuple[Any, ...] | None
) -> model.Hidden | None:
    """The hidden factor a ``factor`` statement declares, or None (with diagnostics)."""
    kind = "factor" if f.levels is not None else f.name
    if kind not in _SCHEMAS:
        ctx.error(
            f"'{f.name}' is not a built-in hidden factor",
            f.span,
            did_you_mean(f.name, model.HIDDEN_BUILTINS)
            or f"built-ins: {', '.join(model.HIDDEN_BUILTINS)}; or give levels: factor {f.name} in [...] hidden",
        )
        return None
    if f.coverage is not None:
        ctx.error(
            "coverage does not apply to a hidden factor",
            f.coverage.span,
            "a hidden factor's level is drawn for each trial or round from all its levels",
        )
    where = f"hidden factor '{f.name}'"
    checked = s.check_settings(f.hidden_settings, _SCHEMAS[kind], where, ctx.diagnostics)
    v = checked.values
    per = v.get("per", "trial")
    if kind == "factor":
        return None if levels is None else model.Hidden(f.name, kind, levels, per)
    if kind == "env_padding":
        return model.Hidden(f.name, kind, v.get("sizes", DEFAULT_PADDING), per)
    if kind == "aslr":
        return model.Hidden(f.name, kind, ("on", "off"), per)
    if kind == "drop_caches":
        return model.Hidden(f.name, kind, ("kept", "dropped"), per)
    if kind == "reboot":  # a reboot between trials of one round would split the round
        return model.Hidden(f.name, kind, ("kept", "rebooted"), "round")
    if "objects" not in v:
        if "objects" not in checked.spans:
            ctx.error(
                "link_order needs the objects to permute",
                f.span,
                'factor link_order hidden { objects ["main.o", "util.o", "io.o"] }',
            )
        return None
    return model.Hidden(f.name, kind, v["objects"], per)


def check_hidden_support(
    ctx: Context,
    hidden: list[model.Hidden],
    hosts: model.Hosts,
    nodes: list[ast.Factor],
    layout: bool,
) -> None:
    """What the hosts and the design must allow: an A/B layout fixes every trial in advance
    and draws nothing; aslr needs a backend that sets it per command (capability ``aslr``),
    reboot one that can reboot a host and reconnect (capability ``reboot``)."""
    spans = {f.name: f.span for f in nodes}
    for h in hidden:
        if layout:
            ctx.error(
                "hidden factors are drawn in factorial designs; an A/B layout fixes its trials",
                spans.get(h.name),
                "vary hidden factors in a factorial experiment",
            )
        backend = (ctx.backends or {}).get(hosts.kind)
        if (
            h.kind == "aslr"
            and backend is not None
            and "aslr" not in getattr(backend, "capabilities", ())
        ):
            ctx.error(
                f"hosts {hosts.kind} cannot turn address-space randomisation off per trial",
                spans.get(h.name),
                "hidden aslr needs a backend with the 'aslr' capability (local, ssh)",
            )
        if (
            h.kind == "reboot"
            and backend is not None
            and not (
                "reboot" in getattr(backend, "capabilities", ())
                or getattr(backend, "supports_reboot", False)
            )
        ):
            ctx.error(
                f"hosts {hosts.kind} cannot reboot a host between rounds",
                spans.get(h.name),
                "hidden reboot needs a backend with the 'reboot' capability (ssh, cloud backends)",
            )
