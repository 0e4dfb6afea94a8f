"""Configurations of an experiment: benchmarks crossed with the covered levels of their factors,
each with its command expanded. Pure and deterministic (coverage draws from design.streams)."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from benchlang import model
from benchlang.design.counting import covered_count
from benchlang.design.streams import draws
from benchlang.lang.shell import parse_template
from benchlang.plan.plan import Configuration


def covered_levels(
    factor: model.Factor, index: int, seed: int, stream: str = "coverage"
) -> tuple[Any, ...]:
    """The levels a factor keeps under ``coverage N%``: ceil(N% x L) of them, chosen by the
    seed, kept in declared order (DataMill's per-factor coverage, de Oliveira et al. 2013);
    hardware factors draw from their own ``stream``."""
    n = len(factor.levels)
    keep = covered_count(n, factor.coverage)
    if keep >= n:
        return factor.levels
    keys = draws(seed, f"{stream}:{index}", np.arange(n))
    chosen = np.sort(np.argsort(keys, kind="stable")[:keep])
    return tuple(factor.levels[i] for i in chosen)


def substitute(template: str, values: dict[str, Any]) -> str:
    """Fill ``{name}`` placeholders, each quoted for the shell context it stands in, so a
    level is one literal word wherever it is (``{{`` is a literal brace; see lang.shell)."""
    return parse_template(template).render(values)


def placeholder_values(
    experiment: model.Experiment, levels: tuple[tuple[str, Any], ...]
) -> dict[str, Any]:
    """What each ``{name}`` of a command expands to (before quoting): the design's runtime,
    and each level, or its text for factors that have one (the A/B ``version``)."""
    values: dict[str, Any] = {}
    if experiment.design.runtime is not None:
        values["runtime"] = _seconds(experiment.design.runtime)
    factors = {f.name: f for f in experiment.factors}
    for name, level in levels:
        factor = factors.get(name)
        values[name] = factor.text(level) if factor is not None else level
    return values


def configurations(experiment: model.Experiment) -> tuple[Configuration, ...]:
    """Benchmarks in spec order, each crossed with the factors it uses (declared order)."""
    levels = {
        f.name: covered_levels(f, i, experiment.seed) for i, f in enumerate(experiment.factors)
    }
    factors = {f.name: f for f in experiment.factors}
    structural = placeholder_values(experiment, ())
    out: list[Configuration] = []
    for bench in experiment.benchmarks:
        names = bench.factors
        template = parse_template(bench.command)  # lexed once, rendered per configuration
        options = [[((n, v), factors[n].text(v)) for v in levels[n]] for n in names]
        for combo in itertools.product(*options):
            values = dict(structural)
            values.update(zip(names, (text for _, text in combo), strict=True))
            out.append(
                Configuration(
                    len(out),
                    bench.name,
                    tuple(pair for pair, _ in combo),
                    template.render(values, keep=bench.hidden),
                )
            )
    return tuple(out)


def _seconds(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value
