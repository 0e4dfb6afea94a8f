"""Hardware factors (``factor cpu from hosts "cpu_model"``) and ``hosts where`` conditions:
DataMill's machine selection (de Oliveira et al., ICPE 2013, §4.1; docs/hardware-factors.md).

Providers are the ``benchlang.factors`` entry points; the checker loads the one a factor names
to ask whether it knows the key (no I/O: the levels come from the hosts' facts at plan time).
"""

from __future__ import annotations

from typing import Any

from benchlang import model
from benchlang.entrypoints import entry_points_of
from benchlang.lang import ast
from benchlang.lang.check.context import Context
from benchlang.lang.diagnostics import did_you_mean


def check_host_factors(ctx: Context, factors: list[ast.Factor]) -> list[model.HostFactor]:
    """The hardware factors: a known provider, a key it accepts, coverage in [0%, 100%]."""
    if not factors:
        return []
    out = []
    points = {ep.name: ep for ep in entry_points_of("benchlang.factors")}
    for f in factors:
        provider, key = f.provider, f.key
        if provider is None or key is None:  # a factor with levels (check.factors)
            continue
        name = provider.value
        point = points.get(name)
        if point is None:
            hint = did_you_mean(name, points) or (
                f"installed factor providers: {', '.join(points) or 'none'} (see 'benchlang plugins')"
            )
            ctx.error(f"no factor provider named '{name}' is installed", provider.span, hint)
            ctx.broken_factors.add(f.name)
            continue
        try:
            problem = point.load()().check_key(key.value)
        except Exception as err:  # a broken plugin is reported, not raised
            problem = f"the factor provider '{name}' failed to load: {err}"
        if problem is not None:
            ctx.error(f"factor '{f.name}': {problem}", key.span)
            ctx.broken_factors.add(f.name)
            continue
        coverage = 100.0 if f.coverage is None else f.coverage.value
        if f.coverage is not None and not 0.0 <= coverage <= 100.0:
            ctx.error(f"coverage {coverage:g}% is outside [0%, 100%]", f.coverage.span)
            continue
        out.append(model.HostFactor(f.name, name, key.value, coverage))
    return out


def check_host_where(ctx: Context, nodes: list[ast.HostsWhere]) -> list[model.HostCondition]:
    """The conditions of every ``hosts where`` (several statements add up, as one ``and``)."""
    out = []
    for node in nodes:
        for c in node.conditions:
            if c.op == "in":
                if c.value.kind != "list" or not c.value.value:
                    ctx.error(f"'{c.fact} in' needs a non-empty list", c.value.span)
                    continue
                values = [_operand(ctx, c, v) for v in c.value.value]
                if all(v is not None for v in values):
                    out.append(model.HostCondition(c.fact, "in", tuple(values), _text(c)))
                continue
            value = _operand(ctx, c, c.value)
            if value is None:
                continue
            if isinstance(value, str) and c.op not in ("==", "!="):
                ctx.error(
                    f"'{c.fact} {c.op}' compares a string: only == and != do",
                    c.span,
                    "sizes and frequencies take units: memory >= 2GB, cpu_freq >= 2GHz",
                )
                continue
            out.append(model.HostCondition(c.fact, c.op, value, _text(c)))
    return out


def _operand(ctx: Context, c: ast.Condition, value: ast.Value) -> Any:
    if value.kind == "quantity":
        number, unit = value.value
        scale, dimension = model.QUANTITY_UNITS[unit]
        return (number * scale, dimension)
    if value.kind in ("string", "int", "float"):
        return value.value
    ctx.error(
        f"'{c.fact}' is compared with {value.describe()}",
        value.span,
        'write a string, a number or a quantity: arch == "x86_64", cores >= 4, memory >= 2GB',
    )
    return None


def _text(c: ast.Condition) -> str:
    def shown(v: ast.Value) -> str:
        if v.kind == "quantity":
            return f"{v.value[0]:g}{v.value[1]}"
        if v.kind == "list":
            return "[" + ", ".join(shown(x) for x in v.value) + "]"
        return f'"{v.value}"' if v.kind == "string" else str(v.value)

    return f"{c.fact} {c.op} {shown(c.value)}"
