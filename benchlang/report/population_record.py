"""The reproducibility record's line for a population factor (TriScale, Jacob et al. JSys
2021, §5.3): the factor, how many inputs were sampled, and what is generalised over them."""

from __future__ import annotations

from benchlang.report.data import ExperimentData
from benchlang.stats.population import population_settings


def record_lines(data: ExperimentData) -> list[str]:
    """The record's line: the population factor, how many inputs were sampled (levels with
    trials, of those declared) and the percentile and confidence generalised over them."""
    exp = data.experiment
    pop = exp.population
    if pop is None:
        return []
    sampled, declared = sampled_inputs(data)
    settings = sorted({population_settings(pop, k) for k in exp.kpis})
    over = ", ".join(f"p{p:g} at {c:g}%" for p, c in settings)
    return [
        f"population: factor {pop.factor}, {sampled} inputs sampled"
        + (f" (of {declared} declared)" if declared != sampled else "")
        + (f"; KPIs generalised over the inputs' KPIs as {over}" if over else "")
        + " (TriScale §5.3)"
    ]


def sampled_inputs(data: ExperimentData) -> tuple[int, int]:
    """The population factor's inputs sampled (levels with trials) and declared."""
    pop = data.experiment.population
    if pop is None:
        return 0, 0
    sampled = {str(lv[pop.factor]) for *_, lv in data.configurations() if pop.factor in lv}
    return len(sampled), len(data.experiment.factor(pop.factor).levels)
