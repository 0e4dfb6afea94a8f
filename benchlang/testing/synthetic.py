"""Stores of seeded synthetic values for a real spec's real plan: the trials the planner
schedules (configurations, series, rounds, order, hosts, layout phases), written through the
store's public API with values a test or benchmark chooses, so analyses and reports are fast and
deterministic. Test support (docs/testing.md): no benchlang run uses it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import cast

import numpy as np

from benchlang.plan.plan import ORDER_KINDS, Plan

Value = Mapping[str, float | np.ndarray] | str
"""Per trial: its measures (a float each, an array for a raw series), or a failure reason."""


def synthetic_store(
    spec: str | Path,
    store: str | Path,
    value: Callable[[Plan, int], Value],
    *,
    facts: Mapping[str, Mapping[str, str]] | None = None,
    seed: int | None = None,
) -> Plan:
    """Write every planned trial of ``spec`` to ``store`` (created) with ``value(plan, t)``.

    A string from ``value`` fails the trial with that reason (exit status 1, the reason as its
    stderr). ``facts`` maps host names to the facts recorded for them.
    """
    from benchlang.app.plan import build_plan
    from benchlang.run.store import Store, TrialRecord

    planned = build_plan(spec, seed)
    plan, experiment = planned.plan, planned.experiment
    text = Path(spec).read_text(encoding="utf-8")
    with Store(store, create=True) as s:
        s.add_plan(
            plan.hash, experiment.name, plan.spec_hash, plan.seed, plan.json_text(), str(spec), text
        )
        for host, host_facts in (facts or {}).items():
            s.record_host(plan.hash, host, host_facts)
        series_of, host_of = plan.trial_series, plan.trial_host
        clock = 1_700_000_000.0
        for t in range(plan.n_trials):
            config = plan.configurations[int(plan.trial_configuration[t])]
            r = int(plan.trial_round[t])
            got = value(plan, t)
            failed = isinstance(got, str)
            measures, series = ({}, {}) if isinstance(got, str) else _measures(got)
            s.record_trial(
                plan.hash,
                TrialRecord(
                    trial=t,
                    series=int(series_of[t]),
                    round=r,
                    position=int(plan.trial_position[t]),
                    host=plan.hosts[int(host_of[t])],
                    configuration=config.index,
                    label=config.label,
                    benchmark=config.benchmark,
                    levels=dict(config.levels),
                    order_kind=ORDER_KINDS[int(plan.round_order[r])],
                    status="failed" if failed else "ok",
                    reason=got if isinstance(got, str) else None,
                    exit_status=1 if failed else 0,
                    timed_out=False,
                    started=clock + t,
                    ended=clock + t + 0.5,
                    attempts=1,
                    stdout_tail=b"",
                    stderr_tail=got.encode() if isinstance(got, str) else b"",
                    measures=measures,
                    series_values=series,
                    phase=plan.phase(t),
                ),
            )
    return plan


def _measures(
    got: Mapping[str, float | np.ndarray],
) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """A trial's single values (0-d) and raw series (1-d), as ``Value`` gives them."""
    measures = {k: cast(float, v) for k, v in got.items() if np.ndim(v) == 0}
    series = {k: cast(np.ndarray, v) for k, v in got.items() if np.ndim(v) == 1}
    return measures, series


def lognormal(plan: Plan, t: int, scale: float = 0.03) -> float:
    """A seeded lognormal factor around 1 for trial ``t`` (from the plan's own trial seed)."""
    return float(np.exp(np.random.default_rng(int(plan.trial_seed[t])).normal(0.0, scale)))
