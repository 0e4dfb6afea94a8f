"""Statistics methods named in a spec: looked up in the registry (``benchlang.statistics``),
their settings validated against the parameters they declare, offline (docs/plugins.md)."""

from __future__ import annotations

from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context
from benchlang.lang.diagnostics import Span, did_you_mean
from benchlang.stats.contract import Method
from benchlang.stats.registry import statistics_methods

KIND_WORDS = {
    "kpi": "KPI",
    "variability": "variability",
    "comparison": "comparison",
    "factorial": "factorial analysis",
    "stopping": "stopping rule",
    "order": "order analysis",
}


def find_method(ctx: Context, name: str, span: Span | None, *kinds: str) -> Method | None:
    """The installed method ``name`` of one of ``kinds``, or a positioned error saying which
    methods of those kinds are installed (with "did you mean")."""
    catalogue = ctx.methods if ctx.methods is not None else statistics_methods()
    what = " or ".join(KIND_WORDS[k] for k in kinds)
    method = catalogue.get(name)
    if method is None or method.kind not in kinds:
        names = catalogue.of_kind(*kinds)  # loads every declaration: only on an error
        if method is not None:
            message = f"'{name}' is a {KIND_WORDS[method.kind]} method, not a {what} method"
        else:
            message = f"unknown {what} method '{name}'"
        hint = did_you_mean(name, names) or (
            f"installed {what} methods: {', '.join(names)} (benchlang plugins --describe NAME)"
        )
        ctx.error(message, span, hint)
        return None
    return method


def check_method_settings(
    ctx: Context,
    method: Method,
    settings: ast.Settings | None,
    where: str,
    span: Span | None = None,
) -> s.Checked:
    """Each setting against the method's declared parameters; required ones must be given
    (a missing one is reported at ``span``, else at the settings block)."""
    checked = s.check_settings(settings, s.method_schema(method), where, ctx.diagnostics)
    for p in method.parameters:
        if p.required and p.name not in checked.spans:
            ctx.error(
                f"{where} needs '{p.name}'",
                span or (settings.span if settings is not None else None),
                f"{p.name}: {p.doc}" + (f" ({p.describe_range()})" if p.describe_range() else ""),
            )
    return checked
