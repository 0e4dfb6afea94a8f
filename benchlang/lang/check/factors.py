"""Factors and their levels (lists and ranges), with per-factor coverage."""

from __future__ import annotations

import math
from typing import Any

from benchlang import model
from benchlang.lang import ast
from benchlang.lang.check.context import MAX_TRIALS, STRUCTURE_PLACEHOLDERS, Context
from benchlang.lang.check.hidden import check_hidden


def check_factors(
    ctx: Context, factors: list[ast.Factor]
) -> tuple[list[model.Factor], list[model.Hidden]]:
    """The crossed factors, and the hidden ones (lang.check.hidden)."""
    out: list[model.Factor] = []
    hidden: list[model.Hidden] = []
    ctx.unique(factors, "factor")
    reserved = set(STRUCTURE_PLACEHOLDERS) - {"runtime"} | {
        "version",
        "request",
        "replicate",
        "host",
    }
    for f in factors:
        if f.name in reserved:
            ctx.error(f"'{f.name}' is reserved for the design and cannot be a factor", f.span)
            continue
        if f.provider is not None:  # a hardware factor (lang.check.inventory)
            continue
        levels = factor_levels(ctx, f) if f.levels is not None else None
        if f.name == "runtime" and levels is not None:
            levels = runtime_levels(ctx, f, levels)
        if f.hidden is not None:
            h = check_hidden(ctx, f, levels)
            if h is None:
                ctx.broken_factors.add(f.name)
            elif f.name not in {x.name for x in hidden}:
                hidden.append(h)
            continue
        if levels is None:
            ctx.broken_factors.add(f.name)
        coverage = 100.0
        if f.coverage is not None:
            coverage = f.coverage.value
            if not 0.0 <= coverage <= 100.0:
                ctx.error(f"coverage {coverage:g}% is outside [0%, 100%]", f.coverage.span)
        if levels is not None and f.name not in {x.name for x in out}:
            out.append(model.Factor(f.name, levels, coverage))
    return out, hidden


def runtime_levels(
    ctx: Context, f: ast.Factor, levels: tuple[Any, ...]
) -> tuple[int | float, ...] | None:
    """``factor runtime in [30s, 60s]``: the same protocol at several runtimes in one spec
    (TriScale, Jacob et al. JSys 2021, §4.6 and Fig. 4); each level a positive duration,
    kept in seconds, which ``{runtime}`` expands to as the design's runtime does."""
    assert f.levels is not None  # check_factors asks for factors with levels only
    if f.hidden is not None or f.provider is not None or f.levels.kind != "list":
        ctx.error("factor runtime takes a list of durations: factor runtime in [30s, 60s]", f.span)
        return None
    out = []
    for item, level in zip(f.levels.value, levels, strict=True):
        if item.kind not in ("duration", "int", "float") or not level > 0:
            ctx.error(
                f"a runtime level must be a positive duration, got {item.describe()}",
                item.span,
                "factor runtime in [30s, 60s]",
            )
            return None
        out.append(int(level) if float(level).is_integer() else float(level))
    return tuple(out)


def factor_levels(ctx: Context, f: ast.Factor) -> tuple[Any, ...] | None:
    value = f.levels
    assert value is not None  # check_factors asks for factors with levels only
    if value.kind == "range":
        start, stop, step = value.value
        step = 1 if step is None else step
        if step <= 0:
            ctx.error("a range step must be positive", value.span)
            return None
        if stop < start:
            ctx.error(
                f"the range {start}..{stop} is empty",
                value.span,
                "write the smaller bound first",
            )
            return None
        if not all(math.isfinite(x) for x in (start, stop, step)):
            ctx.error("a range needs finite bounds and step", value.span)
            return None
        count = math.floor((stop - start) / step + 1e-9) + 1
        if count > MAX_TRIALS:
            ctx.error(
                f"the range {start}..{stop} has {count} levels, more than a plan can hold ({MAX_TRIALS})",
                value.span,
                "use a coarser step",
            )
            return None
        if all(isinstance(x, int) for x in (start, stop, step)):
            return tuple(start + i * step for i in range(count))
        return tuple(float(f"{start + i * step:.15g}") for i in range(count))  # 0.1 * 3 -> 0.3
    if value.kind != "list":
        ctx.error(
            f"factor '{f.name}' needs a list or a range of levels, got {value.describe()}",
            value.span,
            'e.g. factor tool in ["xz", "bzip2"] or factor level in 1..9',
        )
        return None
    if not value.value:
        ctx.error(f"factor '{f.name}' has no levels", value.span)
        return None
    levels, seen = [], set()
    for item in value.value:
        if item.kind in ("list", "range"):
            ctx.error("a factor level must be a string or a number", item.span)
            return None
        if item.kind == "float" and not math.isfinite(item.value):
            ctx.error("a factor level must be a finite number", item.span)
            return None
        key = (type(item.value).__name__, item.value)
        if key in seen:
            ctx.error(f"level {item.value!r} is listed twice", item.span)
            continue
        seen.add(key)
        levels.append(item.value)
    return tuple(levels)
