"""Compile a validated Experiment into a Plan. Pure and deterministic: same spec and seed,
same plan, byte for byte (all randomness from benchlang.plan.streams)."""

from __future__ import annotations

import itertools
import math
import shlex
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchlang import model
from benchlang.plan.layouts import layout_counts
from benchlang.plan.plan import Configuration, Derived, Plan, paused_gc
from benchlang.plan.streams import draws, uniforms


def covered_count(n_levels: int, coverage: float) -> int:
    """How many of ``n_levels`` levels ``coverage N%`` keeps: ceil(N% x L), at least one."""
    return max(1, math.ceil(coverage / 100.0 * n_levels - 1e-9))


def trial_count(design: model.Design, n_configs: int) -> int:
    """Trials a design plans: runs x series x configurations, or the layout's trials."""
    if design.layout is not None:
        L = design.layout
        return layout_counts(L.kind, L.hosts, L.requests, L.repetitions, L.warmup, L.cooldown)["trials"]
    per_series = design.runs * (2 if design.order == "fixed_vs_random" else 1)
    return n_configs * per_series * design.series


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


def placeholder_values(experiment: model.Experiment, levels: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
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
    levels = {f.name: covered_levels(f, i, experiment.seed) for i, f in enumerate(experiment.factors)}
    factors = {f.name: f for f in experiment.factors}
    structural = {k: shlex.quote(_text(v)) for k, v in placeholder_values(experiment, ()).items()}
    out: list[Configuration] = []
    for bench in experiment.benchmarks:
        names = bench.factors
        # Each level is quoted once, and its (name, level) pair shared by every configuration.
        options = [[((n, v), shlex.quote(_text(factors[n].text(v)))) for v in levels[n]] for n in names]
        for combo in itertools.product(*options):
            values = dict(structural)
            values.update(zip(names, (quoted for _, quoted in combo), strict=True))
            out.append(Configuration(len(out), bench.name, tuple(pair for pair, _ in combo), bench.command.format_map(values)))
    return tuple(out)


def _seconds(value: float) -> int | float:
    return int(value) if float(value).is_integer() else value


def round_orders(n_rounds: int, n_configs: int, kinds: np.ndarray, seed: int) -> np.ndarray:
    """Permutation of configurations for each round: identity for fixed rounds, a fresh
    seeded permutation (argsort of SplitMix64 keys) for random ones."""
    orders = np.broadcast_to(np.arange(n_configs, dtype=np.int32), (n_rounds, n_configs)).copy()
    random_rounds = np.flatnonzero(kinds == 1)
    if random_rounds.size and n_configs > 1:
        keys = draws(seed, "order", random_rounds[:, None], np.arange(n_configs)[None, :])
        orders[random_rounds] = np.argsort(keys, axis=1, kind="stable").astype(np.int32)
    return orders


def compile_plan(experiment: model.Experiment, hosts: Sequence[str] = ("local",)) -> Plan:
    if experiment.design.layout is not None:
        from benchlang.plan.ab_plan import compile_layout_plan

        return compile_layout_plan(experiment, hosts)
    seed = experiment.seed
    design = experiment.design
    with paused_gc():
        configs = configurations(experiment)
    n_configs = len(configs)
    per_series = design.runs * (2 if design.order == "fixed_vs_random" else 1)
    n_series = design.series
    n_rounds = per_series * n_series

    round_series = np.repeat(np.arange(n_series, dtype=np.int32), per_series)
    within = np.tile(np.arange(per_series, dtype=np.int32), n_series)
    if design.order == "fixed":
        kinds = np.zeros(n_rounds, dtype=np.int8)
    elif design.order == "random":
        kinds = np.ones(n_rounds, dtype=np.int8)
    else:
        kinds = (within % 2).astype(np.int8)
    orders = round_orders(n_rounds, n_configs, kinds, seed)
    round_host = (np.arange(n_rounds, dtype=np.int32) % max(1, len(hosts))).astype(np.int32)

    if design.span and n_series > 1:
        offsets = np.sort(uniforms(seed, "span", np.arange(n_series)) * design.span)
        series_start = offsets - offsets[0]
    else:
        series_start = np.zeros(n_series)

    n_trials = n_rounds * n_configs
    trial_round = np.repeat(np.arange(n_rounds, dtype=np.int32), n_configs)
    trial_position = np.tile(np.arange(n_configs, dtype=np.int32), n_rounds)
    trial_configuration = orders.reshape(-1)
    trial_seed = (draws(seed, "trial", np.arange(n_trials)) >> np.uint64(33)).astype(np.int64)

    derived = (
        Derived("configurations", n_configs, _configuration_reason(experiment)),
        Derived("runs", design.runs, design.runs_reason),
        Derived("series", n_series, design.series_reason),
        Derived("order", design.order, _order_reason(design.order, design.runs)),
        Derived("rounds", n_rounds, f"{per_series} per series x {n_series} series"),
        Derived("trials", n_trials, f"{n_rounds} rounds x {n_configs} configurations"),
    )
    return Plan(
        experiment=experiment.name, seed=seed, spec_hash=experiment.spec_hash, hosts=tuple(hosts),
        configurations=configs, series_start=series_start, round_series=round_series,
        round_order=kinds, round_host=round_host, trial_round=trial_round,
        trial_position=trial_position, trial_configuration=trial_configuration,
        trial_seed=trial_seed, derived=derived,
    )


def _configuration_reason(experiment: model.Experiment) -> str:
    parts = []
    for bench in experiment.benchmarks:
        factors = " x ".join(f"{n} ({len(covered_levels(experiment.factor(n), experiment.factors.index(experiment.factor(n)), experiment.seed))})" for n in bench.factors)
        parts.append(f"{bench.name}" + (f": {factors}" if factors else ""))
    return "; ".join(parts)


def _order_reason(order: str, runs: int) -> str:
    return {
        "fixed": "every round runs the configurations in declared order",
        "random": "every round runs a fresh seeded permutation of the configurations",
        "fixed_vs_random": f"{runs} fixed-order rounds interleaved with {runs} randomly permuted rounds (OrderSage, Duplyakin et al. ATC 2023, Alg. 1)",
    }[order]
