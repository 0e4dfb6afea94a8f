"""The factorial plan: every configuration once per round, rounds in series. Pure and
deterministic (all randomness from benchlang.design.streams)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchlang import model
from benchlang.design.streams import draws, uniforms
from benchlang.plan.configurations import configurations, covered_levels
from benchlang.plan.plan import Derived, Plan, paused_gc


def round_orders(n_rounds: int, n_configs: int, kinds: np.ndarray, seed: int) -> np.ndarray:
    """Permutation of configurations for each round: identity for fixed rounds, a fresh
    seeded permutation (argsort of SplitMix64 keys) for random ones."""
    orders = np.broadcast_to(np.arange(n_configs, dtype=np.int32), (n_rounds, n_configs)).copy()
    random_rounds = np.flatnonzero(kinds == 1)
    if random_rounds.size and n_configs > 1:
        keys = draws(seed, "order", random_rounds[:, None], np.arange(n_configs)[None, :])
        orders[random_rounds] = np.argsort(keys, axis=1, kind="stable").astype(np.int32)
    return orders


def compile_factorial_plan(experiment: model.Experiment, hosts: Sequence[str]) -> Plan:
    """Rounds of every configuration in fixed, random or fixed_vs_random order, over series."""
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
        experiment=experiment.name,
        seed=seed,
        spec_hash=experiment.spec_hash,
        hosts=tuple(hosts),
        configurations=configs,
        series_start=series_start,
        round_series=round_series,
        round_order=kinds,
        round_host=round_host,
        trial_round=trial_round,
        trial_position=trial_position,
        trial_configuration=trial_configuration,
        trial_seed=trial_seed,
        derived=derived,
    )


def _configuration_reason(experiment: model.Experiment) -> str:
    parts = []
    for bench in experiment.benchmarks:
        factors = " x ".join(
            f"{n} ({len(covered_levels(experiment.factor(n), experiment.factors.index(experiment.factor(n)), experiment.seed))})"
            for n in bench.factors
        )
        parts.append(f"{bench.name}" + (f": {factors}" if factors else ""))
    return "; ".join(parts)


def _order_reason(order: str, runs: int) -> str:
    return {
        "fixed": "every round runs the configurations in declared order",
        "random": "every round runs a fresh seeded permutation of the configurations",
        "fixed_vs_random": f"{runs} fixed-order rounds interleaved with {runs} randomly permuted rounds (OrderSage, Duplyakin et al. ATC 2023, Alg. 1)",
    }[order]
