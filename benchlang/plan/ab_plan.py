"""Compile an A/B layout design into a Plan (Bakshy & Frachtenberg, WWW 2015, §4, Table 2).

A round is one host batch: one version's service instance on one host, started after the
spec's reset. Rounds are ordered by (batch, host), so every host finishes its first batch before
its second; each host runs its own rounds (layout hosts are pinned to backend hosts, in the
backend's order). Warm-up and cool-down trials are in the plan with their phase; reports leave
them out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from benchlang import model
from benchlang.design.layouts import SHORT_NAMES, layout_schedule
from benchlang.design.streams import draws
from benchlang.plan.configurations import configurations
from benchlang.plan.plan import Derived, Plan, PlanError

LAYOUT_WHY = {
    "unbalanced": "each host runs one version; every request once, on one version (one batch per host)",
    "request_balanced": "the same requests under both versions, on different hosts (one batch per host)",
    "host_balanced": "every host runs both versions in two batches, on distinct requests",
    "fully_balanced": "every request runs on the same host under both versions: two batches, versions swapped between them",
}


def compile_layout_plan(experiment: model.Experiment, hosts: Sequence[str]) -> Plan:
    layout = experiment.design.layout
    if layout is None:
        raise ValueError("the experiment has no layout")
    if len(hosts) < layout.hosts:
        raise PlanError(
            f"layout {layout.kind} needs {layout.hosts} hosts, but hosts {experiment.hosts.kind} provides {len(hosts)}",
            "list more hosts, use fewer in the layout, or run local worker slots: hosts local { slots N }",
        )
    seed = experiment.seed
    pool = experiment.factor(model.REQUEST_FACTOR).levels
    schedule = layout_schedule(
        layout.kind,
        layout.hosts,
        layout.requests,
        layout.repetitions,
        layout.warmup,
        layout.cooldown,
        seed=seed,
        pool=len(pool),
    )
    configs = configurations(experiment)
    index = {c.levels: c.index for c in configs}
    versions = experiment.factor(model.VERSION_FACTOR).levels
    lookup = np.array(
        [
            [index[((model.VERSION_FACTOR, v), (model.REQUEST_FACTOR, r))] for r in pool]
            for v in versions
        ],
        dtype=np.int32,
    )
    trial_configuration = lookup[schedule.version, schedule.request]
    keys, trial_round = np.unique(
        schedule.batch.astype(np.int64) * layout.hosts + schedule.host, return_inverse=True
    )
    n_rounds, n_trials = int(keys.size), schedule.trials
    dup = schedule.duplication
    per_version = (
        "one version per host"
        if layout.kind in ("unbalanced", "request_balanced")
        else "both versions on every host"
    )
    derived = (
        Derived(
            "layout",
            layout.kind,
            f"{SHORT_NAMES[layout.kind]}: {LAYOUT_WHY[layout.kind]} (Bakshy & Frachtenberg §4, Table 2)",
        ),
        Derived("configurations", len(configs), f"2 versions x {len(pool)} requests in the pool"),
        Derived("hosts", layout.hosts, per_version),
        Derived("batches", n_rounds, "host batches, each started after the reset"),
        Derived(
            "requests",
            schedule.distinct_requests,
            f"{layout.requests} per version, drawn from the pool by the seed",
        ),
        Derived("repetitions", layout.repetitions, "of each request in its host batch"),
        Derived(
            "trials",
            n_trials,
            f"{schedule.measured_trials} measured + {n_trials - schedule.measured_trials} warm-up/cool-down ({layout.warmup} + {layout.cooldown} per batch)",
        ),
        Derived(
            "nu_R",
            dup.nu_R,
            "request duplication: sum over requests of (trials per request)^2 / trials per version (§4.1)",
        ),
        Derived(
            "nu_H",
            dup.nu_H,
            "host duplication: sum over hosts of (trials per host)^2 / trials per version (§4.1)",
        ),
        Derived(
            "omega_R",
            dup.omega_R,
            "requests shared between versions: sum of n_r^A n_r^B / trials per version (§4.1)",
        ),
        Derived(
            "omega_H",
            dup.omega_H,
            "hosts shared between versions: sum of n_h^A n_h^B / trials per version (§4.1)",
        ),
    )
    return Plan(
        experiment=experiment.name,
        seed=seed,
        spec_hash=experiment.spec_hash,
        hosts=tuple(hosts[: layout.hosts]),
        configurations=configs,
        series_start=np.zeros(1),
        round_series=np.zeros(n_rounds, dtype=np.int32),
        round_order=np.ones(n_rounds, dtype=np.int8),
        round_host=(keys % layout.hosts).astype(np.int32),
        trial_round=trial_round.astype(np.int32),
        trial_position=schedule.position.astype(np.int32),
        trial_configuration=trial_configuration,
        trial_seed=(draws(seed, "trial", np.arange(n_trials)) >> np.uint64(33)).astype(np.int64),
        derived=derived,
        layout={
            "kind": layout.kind,
            "hosts": layout.hosts,
            "requests": layout.requests,
            "repetitions": layout.repetitions,
            "warmup": layout.warmup,
            "cooldown": layout.cooldown,
        },
        round_batch=(keys // layout.hosts).astype(np.int8),
        trial_phase=schedule.phase.astype(np.int8),
    )
