"""Configurations of an experiment: benchmarks crossed with the covered levels of their factors,
each with its command expanded. Pure and deterministic (coverage draws from design.streams)."""

from __future__ import annotations

import itertools
import shlex
from typing import Any

import numpy as np

from benchlang import model
from benchlang.design.counting import covered_count
from benchlang.design.streams import draws
from benchlang.plan.plan import Configuration


def covered_levels(factor: model.Factor, index: int, seed: int) -> tuple[Any, ...]:
    """The levels a factor keeps under ``coverage N%``: ceil(N% x L) of them, chosen by the
    seed, kept in declared order (DataMill's per-factor coverage, de Oliveira et al. 2013)."""
    n = len(factor.levels)
    keep = covered_count(n, factor.coverage)
    if keep >= n:
        return factor.levels
    keys = draws(seed, f"coverage:{index}", np.arange(n))
    chosen = np.sort(np.argsort(keys, kind="stable")[:keep])
    return tuple(factor.levels[i] for i in chosen)


def substitute(template: str, values: dict[str, Any]) -> str:
    """Fill ``{name}`` placeholders with shell-quoted values (``{{`` is a literal brace)."""
    quoted = {k: shlex.quote(_text(v)) for k, v in values.items()}
    return template.format_map(quoted)


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


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
    structural = {k: shlex.quote(_text(v)) for k, v in placeholder_values(experiment, ()).items()}
    out: list[Configuration] = []
    for bench in experiment.benchmarks:
        names = bench.factors
        # Each level is quoted once, and its (name, level) pair shared by every configuration.
        options = [
            [((n, v), shlex.quote(_text(factors[n].text(v)))) for v in levels[n]] for n in names
        ]
        for combo in itertools.product(*options):
            values = dict(structural)
            values.update(zip(names, (quoted for _, quoted in combo), strict=True))
            out.append(
                Configuration(
                    len(out),
                    bench.name,
                    tuple(pair for pair, _ in combo),
                    bench.command.format_map(values),
                )
            )
    return tuple(out)


def _seconds(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value
