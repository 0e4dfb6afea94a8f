"""The analysis block: comparisons (bootstrap, mixed effects, ANOVA), order dependence, profiles."""

from __future__ import annotations

import math
from typing import Any

import attrs

from benchlang import model
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context
from benchlang.lang.check.methods import check_method_settings, find_method
from benchlang.lang.diagnostics import did_you_mean
from benchlang.stats.registry import statistics_methods


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
        name = c.method or "bootstrap"
        method = find_method(ctx, name, c.method_span or c.span, "comparison")
        if method is None:
            continue
        checked = check_method_settings(ctx, method, c.settings, f"compare with {name}")
        out.append(model.Comparison(c.metric, c.by, name, checked.values))
    factor_names = [f.name for f in factors] + list(blocking)
    for item in items:
        if item.keyword != "anova":
            continue
        assert item.name is not None and item.path is not None  # to_ast's anova sets both
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
        shape = _anova_shape(ctx, item)
        if not unknown and shape is not None and find_method(ctx, "anova", item.span, "factorial"):
            out.append(
                model.Comparison(
                    item.name,
                    "+".join(item.terms),
                    "anova",
                    {"terms": item.terms, "operators": item.path.value, **shape},
                )
            )
    return tuple(out)


def _anova_shape(ctx: Context, item: ast.AnalysisItem) -> dict[str, Any] | None:
    """``order`` (``(A + B + C)^2``: interactions up to that order, DataMill's reduced
    tables) and ``by`` (``by host``: one table per host, DataMill Table 4); None when wrong."""
    found = {x.key: _given(x) for x in (item.settings.items if item.settings else ())}
    shape: dict[str, Any] = {"order": None, "by": None}
    assert item.path is not None  # to_ast's anova: the formula's operators
    if "order" in found:
        order = found["order"].value
        if set(item.path.value) != {"+"}:
            ctx.error(
                "an interaction order applies to a sum of factors",
                found["order"].span,
                f"anova {item.name} ~ ({' + '.join(item.terms)})^2",
            )
            return None
        if not 1 <= order <= len(item.terms):
            ctx.error(
                f"interaction order {order}: it lies between 1 and the {len(item.terms)} terms",
                found["order"].span,
                f"anova {item.name} ~ ({' + '.join(item.terms)})^2",
            )
            return None
        shape["order"] = order
    if "by" in found:
        by = found["by"].value
        if by != "host":
            ctx.error(
                f"anova ... by {by}: only 'by host' (one table per host) is known",
                found["by"].span,
                f"anova {item.name} ~ {' + '.join(item.terms)} by host",
            )
            return None
        if "host" in item.terms:
            ctx.error(
                "anova by host cannot also have host as a term (it is one level per table)",
                found["by"].span,
            )
            return None
        shape["by"] = by
    return shape


def _given(setting: ast.Setting) -> ast.Value:
    """The value of a setting that to_ast always builds with one (anova's order and by)."""
    assert setting.value is not None
    return setting.value


def check_profiles(ctx: Context, items: list[ast.AnalysisItem]) -> tuple[dict[str, Any], ...]:
    out = []
    for item in items:
        assert item.path is not None  # profile NAME from file STRING
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


def method_needs(ctx: Context, compares: list[ast.Compare]) -> list[tuple[int, str]]:
    """(trials per compared level, which comparison) each ``compare`` asks of the design
    (``Method.needs``), for ``runs auto``. Quiet: the settings are checked, and reported,
    with the analysis."""
    catalogue = ctx.methods if ctx.methods is not None else statistics_methods()
    out = []
    for c in compares:
        name = c.method or "bootstrap"
        method = catalogue.get(name)
        if method is None or method.kind != "comparison":
            continue
        values = s.check_settings(c.settings, s.method_schema(method), "", []).values
        need = method.needs({**method.defaults(), **values})
        out.append((need, f"compare {c.metric} by {c.by} with {name}"))
    return out


def check_sample_sizes(
    ctx: Context,
    comparisons: tuple[model.Comparison, ...],
    nodes: list[ast.Compare],
    design: model.Design,
) -> None:
    """Warn when the plan gives a compared level fewer trials than its method needs
    (``Method.needs``): the comparison would then say only that it is not computed."""
    if design.layout is not None:
        return
    per_level = design.runs * design.series
    spans = {(c.metric, c.by): c.span for c in nodes}
    for c in comparisons:
        method = find_method(ctx, c.method, None, "comparison", "factorial")
        if method is None or method.kind != "comparison":
            continue
        need = method.needs({**method.defaults(), **c.settings})
        if per_level < need:
            ctx.warn(
                f"compare {c.metric} by {c.by} with {c.method} needs at least {need} trials per "
                f"level; the design gives {per_level} (runs x series)",
                spans.get((c.metric, c.by)),
                f"runs {-(-need // design.series)} or more",
            )


_ORDER_VIEWS = ("order_dependence", "position_effects")
"""Order analyses the order report computes together (``benchlang order``; OrderSage §4-§5)."""


def named_order_analyses(ctx: Context, items: list[ast.AnalysisItem]) -> list[ast.AnalysisItem]:
    """``analysis { NAME {...} }``: the method looked up in the registry. The order views
    become the order analysis; a factorial method needs its formula (``anova M ~ A * B``);
    other kinds have their own statements."""
    out = []
    for item in items:
        if item.name == FAMILY:
            continue  # check_family
        assert item.name is not None  # to_ast's analysis method: NAME settings
        method = find_method(ctx, item.name, item.span, "order", "factorial")
        if method is None:
            continue
        if method.name in _ORDER_VIEWS:
            out.append(attrs.evolve(item, keyword="order_dependence"))
        elif method.name == "anova":
            ctx.error("anova takes a formula", item.span, "anova METRIC ~ FACTOR * FACTOR")
        elif method.name == EQUAL_HOSTS:
            continue  # check_equal_hosts
        else:
            ctx.error(
                f"{method.kind} method '{method.name}' from a plugin is checked but not run: "
                "only comparison and stopping methods from plugins are run so far",
                item.span,
            )
    return out


EQUAL_HOSTS = "equal_hosts"
"""The check of DataMill's purposeful redundancy (stats.equal_hosts), run with every
``design { redundancy N }``; ``analysis { equal_hosts { alpha A } }`` sets its level."""


def check_equal_hosts(
    ctx: Context, items: list[ast.AnalysisItem], redundancy: int
) -> dict[str, Any] | None:
    """The equal-hosts check's settings: with redundancy, the method's defaults unless the
    analysis names it; without redundancy there are no equal hosts to compare."""
    mine = [i for i in items if i.name == EQUAL_HOSTS]
    item = ctx.single(mine, f"'{EQUAL_HOSTS}'")
    if item is None and redundancy < 2:
        return None
    method = find_method(ctx, EQUAL_HOSTS, item.span if item else None, "factorial")
    if method is None:
        return None
    if item is None:
        return method.defaults() if redundancy > 1 else None
    if redundancy < 2:
        ctx.error(
            "equal_hosts compares the equal hosts of a redundant design, and this one has none",
            item.span,
            "design { redundancy 2 } runs every configuration on 2 equal hosts",
        )
    checked = check_method_settings(ctx, method, item.settings, EQUAL_HOSTS)
    settings = {**method.defaults(), **checked.values}
    if not 0.0 < settings["alpha"] < 1.0:
        ctx.error("alpha must lie strictly between 0 and 1", checked.spans.get("alpha", item.span))
    return settings


FAMILY = "family"
"""``analysis { family { correction holm|bh|none level 5% } }``: the one family of every
comparison of a run (stats.family; Holm 1979 by default)."""
_FAMILY = {"correction": s.choice("holm", "bh", "none"), "level": s.percent}


def check_family(ctx: Context, items: list[ast.AnalysisItem]) -> dict[str, Any] | None:
    """The family's correction and level, None when the spec keeps the default."""
    item = ctx.single([i for i in items if i.name == FAMILY], f"'{FAMILY}'")
    if item is None:
        return None
    checked = s.check_settings(item.settings, _FAMILY, FAMILY, ctx.diagnostics)
    return {"correction": "holm", **checked.values}


def check_order_dependence(ctx: Context, items: list[ast.AnalysisItem]) -> dict[str, Any] | None:
    item = ctx.single(items, "'order_dependence'")
    if item is None:
        return None
    method = find_method(ctx, "order_dependence", item.span, "order")
    if method is None:
        return None
    checked = check_method_settings(ctx, method, item.settings, "order_dependence")
    alpha = checked.values.get("alpha", method.defaults()["alpha"])
    if not 0.0 < alpha < 1.0:
        ctx.error("alpha must lie strictly between 0 and 1", checked.spans.get("alpha", item.span))
    return {"alpha": alpha}
