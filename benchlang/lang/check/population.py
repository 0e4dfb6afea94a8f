"""The population factor: ``factor trace in ["a", "b", ...] population { percentile 50
confidence 95% }``, a factor whose levels are a sample of a population of inputs (traces,
prefixes, datasets) that the KPIs generalise over (TriScale, Jacob et al. JSys 2021, §5.3).

The KPI of each input is computed as for any configuration; the population KPI is an
order-statistic bound over the inputs' KPIs (stats.population), so the number of inputs must
reach that bound's minimum (``min_samples``, TriScale §4.5 Eq. 4): fewer is a warning here
(a level may still be added before the run) and a refusal in ``analyze``.
"""

from __future__ import annotations

from benchlang import model
from benchlang.design.counting import covered_count
from benchlang.lang import ast
from benchlang.lang import settings as s
from benchlang.lang.check.context import Context

SCHEMA = {"percentile": s.percentile, "confidence": s.percent}
EXAMPLE = 'factor trace in ["a", "b", "c", "d", "e"] population { percentile 50 confidence 95% }'


def check_population(
    ctx: Context,
    nodes: list[ast.Factor],
    factors: list[model.Factor],
    kpis: list[model.Kpi],
) -> model.Population | None:
    """The one population factor the spec declares, or None (with diagnostics)."""
    declared = [f for f in nodes if f.population is not None]
    if not declared:
        return None
    for extra in declared[1:]:
        ctx.error(
            f"only one factor can be the population; '{declared[0].name}' already is",
            extra.population,
            "generalise over one sample of inputs; cross the others as ordinary factors",
        )
    f = declared[0]
    if f.hidden is not None:
        ctx.error(
            f"factor '{f.name}' cannot be both hidden and a population",
            f.population,
            "a population's inputs are crossed into the configurations: drop 'hidden'",
        )
        return None
    if f.name == "runtime":
        ctx.error(
            "factor runtime cannot be a population: its levels are chosen, not sampled",
            f.population,
            EXAMPLE,
        )
        return None
    checked = s.check_settings(
        f.population_settings, SCHEMA, f"population of factor '{f.name}'", ctx.diagnostics
    )
    factor = next((x for x in factors if x.name == f.name), None)
    if factor is None:
        return None
    population = model.Population(
        f.name, checked.values.get("percentile"), checked.values.get("confidence")
    )
    if len(factor.levels) < 2:
        ctx.error(
            f"a population needs at least two inputs; factor '{f.name}' has {len(factor.levels)}",
            f.population,
            EXAMPLE,
        )
        return None
    from benchlang.stats.population import population_min_inputs  # a population spec's only

    sampled = covered_count(len(factor.levels), factor.coverage)
    kept = "" if sampled == len(factor.levels) else f" ({sampled} kept by its coverage)"
    for k in kpis:
        needed = population_min_inputs(population, k)
        if sampled < needed:
            ctx.warn(
                f"the population KPI of {k.metric} needs at least {needed} inputs; "
                f"factor '{f.name}' has {len(factor.levels)}{kept}",
                f.population,
                (
                    f"keep at least {needed} levels: raise the coverage of factor '{f.name}' or "
                    "add levels"
                    if kept
                    else f"add {needed - sampled} more level(s) to factor '{f.name}'"
                )
                + ", or lower the population's percentile or confidence",
            )
    return population
