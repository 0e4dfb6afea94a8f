"""Warm-up trials of any design: ``warmup N`` in the design or in a benchmark.

As hyperfine's ``--warmup N`` runs N untimed runs of each command before its timed runs, a
plan with warm-up runs N trials of each configuration right before its measured trial in the
first round of each series on each host: after that round's reset, so the configuration meets
warm caches, and again after a series' gap in time (TriScale §4.6) or on another host. They
are trials like any other (run, stored with phase ``warmup`` and their measures, resumed trial
by trial) and are left out of every analysis, as an A/B layout's warm-up (Bakshy &
Frachtenberg, WWW 2015, §2.2). The measured trials keep the seeds, hidden levels and
positions they have without warm-up; a warm-up trial carries its measured trial's position
and hidden levels, and a seed from the stream ``warmup``.
"""

from __future__ import annotations

import attrs
import numpy as np

from benchlang import model
from benchlang.design.streams import draws
from benchlang.plan.plan import PHASES, Derived, Plan

WARMUP = PHASES.index("warmup")


def warmup_counts(experiment: model.Experiment, plan: Plan) -> np.ndarray:
    """Warm-up trials of each configuration: its benchmark's ``warmup``, else the design's."""
    design = experiment.design.warmup
    by_benchmark = {b.name: design if b.warmup is None else b.warmup for b in experiment.benchmarks}
    return np.array([by_benchmark[c.benchmark] for c in plan.configurations], dtype=np.int64)


def with_warmup(plan: Plan, experiment: model.Experiment) -> Plan:
    """The plan with its warm-up trials; the plan itself when no configuration has any (so a
    spec without ``warmup`` keeps its plan hash)."""
    counts = warmup_counts(experiment, plan)
    if not counts.any():
        return plan
    series_host = plan.round_series.astype(np.int64) * len(plan.hosts) + plan.round_host
    _, first = np.unique(series_host, return_index=True)
    warmed = np.zeros(plan.n_rounds, dtype=bool)
    warmed[first] = True
    before = np.where(warmed[plan.trial_round], counts[plan.trial_configuration], 0)
    source = np.repeat(np.arange(plan.n_trials), before + 1)
    phase = np.full(source.size, WARMUP, dtype=np.int8)
    measured = np.cumsum(before + 1) - 1
    phase[measured] = PHASES.index("measured")
    warm = phase == WARMUP
    seeds = plan.trial_seed[source]
    n_warm = int(warm.sum())
    seeds[warm] = (draws(plan.seed, "warmup", np.arange(n_warm)) >> np.uint64(33)).astype(np.int64)
    hidden = (
        {name: [values[i] for i in source.tolist()] for name, values in plan.trial_hidden.items()}
        if plan.trial_hidden
        else plan.trial_hidden
    )
    derived = tuple(
        attrs.evolve(
            d,
            value=int(source.size),
            reason=f"{plan.n_trials} measured ({d.reason}) + {n_warm} warm-up",
        )
        if d.name == "trials"
        else d
        for d in plan.derived
    )
    derived += (Derived("warmup", n_warm, _reason(plan, counts, len(first))),)
    return attrs.evolve(
        plan,
        trial_round=plan.trial_round[source],
        trial_position=plan.trial_position[source],
        trial_configuration=plan.trial_configuration[source],
        trial_seed=seeds,
        trial_phase=phase,
        trial_hidden=hidden,
        derived=derived,
    )


def _reason(plan: Plan, counts: np.ndarray, rounds: int) -> str:
    per_benchmark = {c.benchmark: int(n) for c, n in zip(plan.configurations, counts, strict=True)}
    if len(set(per_benchmark.values())) == 1:
        each = f"{next(iter(per_benchmark.values()))} of each configuration"
    else:
        each = ", ".join(f"{n} of each {b} configuration" for b, n in per_benchmark.items())
    return (
        f"{each} right before its measured trial, in the first round of each series on each "
        f"host ({rounds} rounds); run and stored as warm-up, left out of every analysis "
        "(as hyperfine's --warmup; Bakshy & Frachtenberg §2.2)"
    )
