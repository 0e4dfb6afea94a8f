"""The analysis block: comparisons (bootstrap, mixed effects, ANOVA), order dependence, profiles."""

from __future__ import annotations

import math
from typing import Any

from benchlang import model
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context
from benchlang.lang.diagnostics import did_you_mean

_COMPARE_SCHEMAS = {
    "bootstrap": {
        "cluster": s.choice("none", "iid", "request", "host", "host_block"),
        "replicates": s.count(10),
        "weights": s.choice("poisson", "exponential"),
        "log": s.boolean,
        "interval": s.choice("clt", "percentile"),
        "confidence": s.percent,
    },
    "mixed_effects": {"method": s.choice("auto", "reml", "moments")},
}


def check_analysis(
    ctx: Context,
    blocks: list[ast.Block],
    compares: list[ast.Compare],
    items: list[ast.AnalysisItem],
    metrics: list[model.Metric],
    factors: list[model.Factor],
    blocking: tuple[str, ...] = (),
) -> tuple[model.Comparison, ...]:
    """``blocking``: terms an anova may use besides the factors (host, replicate, hidden)."""
    ctx.single(blocks, "'analysis'")
    metric_names = [m.name for m in metrics]
    out = []
    for c in compares:
        if c.metric not in metric_names:
            ctx.error(
                f"compare on undeclared metric '{c.metric}'",
                c.span,
                did_you_mean(c.metric, metric_names),
            )
            continue
        factor = next((f for f in factors if f.name == c.by), None)
        if factor is None and c.by in ctx.broken_factors:
            continue
        if factor is None:
            ctx.error(
                f"compare by '{c.by}': no such factor",
                c.span,
                did_you_mean(c.by, [f.name for f in factors])
                or "compare by a factor with two levels: control first, treatment second",
            )
            continue
        kept = math.ceil(factor.coverage / 100.0 * len(factor.levels) - 1e-9)
        if len(factor.levels) != 2 or kept < 2:
            ctx.error(
                f"compare by '{c.by}' needs a factor with exactly two levels (control, treatment); it has {min(len(factor.levels), kept)}",
                c.span,
            )
            continue
        method = c.method or "bootstrap"
        if method not in _COMPARE_SCHEMAS:
            ctx.error(
                f"unknown comparison method '{method}'",
                c.method_span or c.span,
                did_you_mean(method, _COMPARE_SCHEMAS) or f"methods: {', '.join(_COMPARE_SCHEMAS)}",
            )
            continue
        checked = s.check_settings(
            c.settings, _COMPARE_SCHEMAS[method], f"compare with {method}", ctx.diagnostics
        )
        out.append(model.Comparison(c.metric, c.by, method, checked.values))
    factor_names = [f.name for f in factors] + list(blocking)
    for item in items:
        if item.keyword != "anova":
            continue
        if item.name not in metric_names:
            ctx.error(
                f"anova on undeclared metric '{item.name}'",
                item.span,
                did_you_mean(item.name, metric_names),
            )
            continue
        unknown = [t for t in item.terms if t not in factor_names]
        for term in unknown:
            ctx.error(
                f"anova term '{term}' is not a factor",
                item.span,
                did_you_mean(term, factor_names),
            )
        if not unknown:
            out.append(
                model.Comparison(
                    item.name,
                    "+".join(item.terms),
                    "anova",
                    {"terms": item.terms, "operators": item.path.value},
                )
            )
    return tuple(out)


def check_profiles(ctx: Context, items: list[ast.AnalysisItem]) -> tuple[dict[str, Any], ...]:
    out = []
    for item in items:
        checked = s.check_settings(
            item.settings,
            {"period": s.duration, "column": s.string},
            f"profile {item.name}",
            ctx.diagnostics,
        )
        if "period" not in checked.values:
            if "period" not in checked.spans:
                ctx.error(
                    f"profile {item.name} needs the sampling period",
                    item.span,
                    f'profile {item.name} from file "{item.path.value}" period 2h',
                )
            continue
        if checked.values["period"] <= 0:
            ctx.error("the period must be positive", checked.spans["period"])
            continue
        out.append(
            {"name": item.name, "path": str(ctx.base_dir / item.path.value), **checked.values}
        )
    return tuple(out)


def check_order_dependence(ctx: Context, items: list[ast.AnalysisItem]) -> dict[str, Any] | None:
    item = ctx.single(items, "'order_dependence'")
    if item is None:
        return None
    checked = s.check_settings(
        item.settings, {"alpha": s.number(0.0, 1.0)}, "order_dependence", ctx.diagnostics
    )
    alpha = checked.values.get("alpha", 0.05)
    if not 0.0 < alpha < 1.0:
        ctx.error("alpha must lie strictly between 0 and 1", checked.spans.get("alpha", item.span))
    return {"alpha": alpha}
