"""Derived metrics: ``metric efficiency = bytes_saved / wall_time``, arithmetic of the
measures of one trial (DataMill, de Oliveira et al. ICPE 2013, §4: a metric computed from
what a job reports, e.g. bytes reduced over execution time).

The expression is parsed by the spec's grammar (never evaluated as text): names must be
single-number measures, ``:`` is not arithmetic, and units are checked where known: ``+``
and ``-`` need equal units, ``*`` and ``/`` compose them (``B/s``).
"""

from __future__ import annotations

from typing import Literal

from benchlang import model
from benchlang.lang import ast
from benchlang.lang.check.context import Context
from benchlang.lang.diagnostics import did_you_mean

ANY = "\0number"  # a constant: takes the unit of what it is added to, none in * and /


def check_expression(
    ctx: Context,
    node: ast.Arith,
    metric: str,
    measures: dict[str, bool],
    units: dict[str, str | None],
) -> tuple[model.Expression | None, str | None]:
    """The model of ``node`` and its unit (None when unknown), or (None, None) after errors."""
    if node.op == "name":
        name = node.value
        if name not in measures:
            ctx.error(
                f"metric '{metric}' uses '{name}', which is no measure",
                node.span,
                did_you_mean(name, measures) or f"measures: {', '.join(sorted(measures))}",
            )
            return None, None
        if measures[name]:
            ctx.error(
                f"metric '{metric}' uses '{name}', a raw series; a derived metric combines single numbers of one trial",
                node.span,
                f"give '{name}' a metric of its own (metric {name} {{ measure mean }})",
            )
            return None, None
        return model.Expression("name", value=name), units.get(name)
    if node.op == "number":
        return model.Expression("number", value=node.value), ANY
    parts = [check_expression(ctx, a, metric, measures, units) for a in node.args]
    args = tuple(p[0] for p in parts if p[0] is not None)
    if len(args) < len(parts):
        return None, None
    if node.op == "neg":
        return model.Expression("neg", args), parts[0][1]
    if node.op == ":":
        ctx.error(
            f"':' is not arithmetic (metric '{metric}')",
            node.span,
            "derived metrics use + - * / and parentheses",
        )
        return None, None
    left, right = parts[0][1], parts[1][1]
    unit = _combine(node.op, left, right)
    if unit is False:
        ctx.error(
            f"metric '{metric}': '{node.op}' of quantities in {left} and {right}",
            node.span,
            "add or subtract measures of the same unit",
        )
        return None, None
    return model.Expression(node.op, args), unit


def _combine(op: str, left: str | None, right: str | None) -> str | Literal[False] | None:
    if op in "+-":
        if left == ANY or right == ANY:
            return right if left == ANY else left
        if left is not None and right is not None and left != right:
            return False
        return left if left is not None else right
    if left is None or right is None:
        return None
    left, right = ("" if u == ANY else u for u in (left, right))
    if op == "*":
        return "·".join(_group(u) for u in (left, right) if u)
    if not right:
        return left
    if left == right:
        return ""
    return f"{_group(left) or '1'}/{_group(right)}"


def _group(unit: str) -> str:
    return f"({unit})" if any(c in unit for c in "/·") else unit


def shown_unit(unit: str | None) -> str | None:
    """The unit a derived metric reports (a bare constant has none)."""
    return None if unit in (None, ANY, "") else unit
