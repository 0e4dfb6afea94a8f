"""The factorial plan: every configuration once per round, rounds in series. Pure and
deterministic (all randomness from benchlang.design.streams)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from benchlang import model
from benchlang.design.streams import draws, uniforms
from benchlang.plan.configurations import configurations, covered_levels
from benchlang.plan.hidden import hidden_levels, hidden_reason
from benchlang.plan.plan import Configuration, Derived, Plan, paused_gc


def round_orders(n_rounds: int, n_configs: int, kinds: np.ndarray, seed: int) -> np.ndarray:
    """Permutation of configurations for each round: identity for fixed rounds, a fresh
    seeded permutation (argsort of SplitMix64 keys) for random ones."""
    orders = np.broadcast_to(np.arange(n_configs, dtype=np.int32), (n_rounds, n_configs)).copy()
    random_rounds = np.flatnonzero(kinds == 1)
    if random_rounds.size and n_configs > 1:
        keys = draws(seed, "order", random_rounds[:, None], np.arange(n_configs)[None, :])
        orders[random_rounds] = np.argsort(keys, axis=1, kind="stable").astype(np.int32)
    return orders


def compile_factorial_plan(
    experiment: model.Experiment,
    hosts: Sequence[str],
    hardware: Mapping[str, tuple[Any, ...]] | None = None,
    groups: Sequence[Sequence[str]] | None = None,
) -> Plan:
    """Rounds of every configuration in fixed, random or fixed_vs_random order, over series.

    With hardware factors (``hardware``: each host's levels), a configuration is a software
    configuration on one host's hardware levels, and every host runs every round of its own
    configurations (DataMill §4.1: the software factors crossed on each chosen machine). With
    ``groups`` of equal hosts (``redundancy``, DataMill §4.2) the hosts of a group share their
    configurations, and each of them runs all their rounds."""
    seed = experiment.seed
    design = experiment.design
    with paused_gc():
        configs = configurations(experiment)
    per_host = len(configs)
    owners = [[h] for h in hosts] if groups is None else [list(g) for g in groups]
    owner_of = np.zeros(len(hosts), dtype=np.int32)
    for i, members in enumerate(owners):
        owner_of[[hosts.index(h) for h in members]] = i
    if hardware:
        configs = _on_hardware(experiment, configs, [hardware[g[0]] for g in owners])
    n_configs = per_host
    spread = len(hosts) if hardware or groups else 1
    per_series = design.runs * (2 if design.order == "fixed_vs_random" else 1) * spread
    n_series = design.series
    n_rounds = per_series * n_series

    round_series = np.repeat(np.arange(n_series, dtype=np.int32), per_series)
    within = np.tile(np.arange(per_series, dtype=np.int32), n_series) // spread
    if design.order == "fixed":
        kinds = np.zeros(n_rounds, dtype=np.int8)
    elif design.order == "random":
        kinds = np.ones(n_rounds, dtype=np.int8)
    else:
        kinds = (within % 2).astype(np.int8)
    orders = round_orders(n_rounds, n_configs, kinds, seed)
    round_host = (np.arange(n_rounds, dtype=np.int32) % max(1, len(hosts))).astype(np.int32)

    span = design.span
    assert not isinstance(span, str)  # "auto" is resolved before planning (app.plan)
    series_start, round_start = spread_over_span(span, round_series, seed)
    round_replicate = None
    if design.replicate > 1:
        round_replicate = (within // (per_series // spread // design.replicate)).astype(np.int32)

    n_trials = n_rounds * n_configs
    trial_round = np.repeat(np.arange(n_rounds, dtype=np.int32), n_configs)
    trial_position = np.tile(np.arange(n_configs, dtype=np.int32), n_rounds)
    trial_configuration = orders.reshape(-1)
    if hardware:
        trial_configuration = trial_configuration + np.repeat(
            owner_of[round_host] * per_host, per_host
        )
    trial_seed = (draws(seed, "trial", np.arange(n_trials)) >> np.uint64(33)).astype(np.int64)
    trial_hidden = (
        hidden_levels(experiment.hidden, seed, trial_round, trial_configuration)
        if experiment.hidden
        else None
    )

    derived: tuple[Derived, ...] = (
        Derived(
            "configurations",
            len(configs),
            _configuration_reason(experiment, len(owners), hardware, grouped=groups is not None),
        ),
        Derived("runs", design.runs, design.runs_reason),
        Derived("series", n_series, design.series_reason),
        Derived("order", design.order, _order_reason(design.order, design.runs)),
        Derived(
            "rounds",
            n_rounds,
            f"{per_series} per series x {n_series} series"
            + (f" ({per_series // spread} on each of {spread} hosts)" if spread > 1 else ""),
        ),
        Derived(
            "trials",
            n_trials,
            f"{n_rounds} rounds x {n_configs} configurations"
            + (
                f" (each round on one of {spread} hosts, its own configurations)"
                if hardware
                else f" (each round on one of {spread} hosts)"
                if spread > 1
                else ""
            ),
        ),
    )
    if experiment.hidden:
        derived += (
            Derived(
                "hidden",
                [h.name for h in experiment.hidden],
                hidden_reason(experiment.hidden),
            ),
        )
    if span:
        derived += (
            Derived(
                "span",
                span,
                (f"{design.span_reason}; " if design.span_reason else "")
                + f"each series over {_duration(span)}, its {per_series} rounds at seeded "
                f"random times across it (TriScale §4.6); {n_series} series one after the other: "
                f"{_duration(span * n_series)} in all",
            ),
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
        round_start=round_start,
        round_replicate=round_replicate,
        hidden=tuple(
            {"name": h.name, "kind": h.kind, "per": h.per, "levels": list(h.levels)}
            for h in experiment.hidden
        ),
        trial_hidden=trial_hidden,
        derived=derived,
    )


def _on_hardware(
    experiment: model.Experiment,
    configs: tuple[Configuration, ...],
    host_levels: list[tuple[Any, ...]],
) -> tuple[Configuration, ...]:
    """The software configurations once per host, each with that host's hardware levels."""
    names = [f.name for f in experiment.hardware]
    return tuple(
        Configuration(
            i * len(configs) + c.index,
            c.benchmark,
            (*c.levels, *zip(names, mine, strict=True)),
            c.command,
        )
        for i, mine in enumerate(host_levels)
        for c in configs
    )


def _configuration_reason(
    experiment: model.Experiment,
    owners: int = 1,
    hardware: Mapping[str, tuple[Any, ...]] | None = None,
    grouped: bool = False,
) -> str:
    parts = []
    for bench in experiment.benchmarks:
        factors = " x ".join(
            f"{n} ({len(covered_levels(experiment.factor(n), experiment.factors.index(experiment.factor(n)), experiment.seed))})"
            for n in bench.factors
        )
        parts.append(f"{bench.name}" + (f": {factors}" if factors else ""))
    text = "; ".join(parts)
    if hardware:
        whose = f"{owners} groups of equal hosts" if grouped else f"{owners} hosts"
        text += f"; on the hardware levels of each of {whose}"
    return text


def _order_reason(order: str, runs: int) -> str:
    return {
        "fixed": "every round runs the configurations in declared order",
        "random": "every round runs a fresh seeded permutation of the configurations",
        "fixed_vs_random": f"{runs} fixed-order rounds interleaved with {runs} randomly permuted rounds (OrderSage, Duplyakin et al. ATC 2023, Alg. 1)",
    }[order]


def spread_over_span(
    span: float | None, round_series: np.ndarray, seed: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """Series start times and each round's start time, in seconds from the run's start.

    TriScale (Jacob et al., JSys 2021, §4.6): a series is run over its span, its runs at
    randomly sampled times across it, so that every phase of a seasonal component is
    sampled. Series follow one another, one span each; inside a series the rounds start at
    sorted seeded uniform times over the span (the very first round at once). Without a span,
    series and rounds run back to back (no start times in the plan).
    """
    n_series = int(round_series.max()) + 1 if round_series.size else 0
    if not span:
        return np.zeros(n_series), None
    series_start = np.arange(n_series, dtype=np.float64) * span
    draws = uniforms(seed, "span-round", np.arange(round_series.size)) * span
    round_start = np.empty(round_series.size)
    for s in range(n_series):
        mine = np.flatnonzero(round_series == s)
        round_start[mine] = series_start[s] + np.sort(draws[mine])
    round_start[0] = 0.0
    return series_start, round_start


def _duration(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"
