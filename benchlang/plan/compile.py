"""Compile a validated Experiment into a Plan. Pure and deterministic: same spec and seed,
same plan, byte for byte (all randomness from benchlang.design.streams)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from benchlang import model
from benchlang.plan.ab_plan import compile_layout_plan
from benchlang.plan.configurations import configurations, placeholder_values, substitute
from benchlang.plan.factorial import compile_factorial_plan
from benchlang.plan.inventory import Inventory, select_hosts
from benchlang.plan.plan import Derived, Plan, PlanError

__all__ = ["compile_plan", "configurations", "placeholder_values", "substitute"]


def compile_plan(
    experiment: model.Experiment,
    hosts: Sequence[str] = ("local",),
    inventory: Inventory | None = None,
) -> Plan:
    """The plan of an experiment on these host names: an A/B layout or a factorial design.

    A spec with hardware factors or ``hosts where`` needs ``inventory`` (each host's facts):
    the plan runs on the hosts plan.inventory selects and records the facts it read."""
    if not experiment.needs_inventory:
        if experiment.design.layout is not None:
            return compile_layout_plan(experiment, hosts)
        return compile_factorial_plan(experiment, hosts)
    if inventory is None:
        raise PlanError(
            "hardware factors and 'hosts where' need the hosts' facts",
            "plan through 'benchlang plan' or 'run', which read them from the backend",
        )
    chosen = select_hosts(experiment, hosts, inventory)
    if experiment.design.layout is not None:
        plan = compile_layout_plan(experiment, chosen.hosts)
    else:
        levels = {h: chosen.levels[h] for h in chosen.hosts} if experiment.hardware else None
        plan = compile_factorial_plan(experiment, chosen.hosts, levels)
    record = {
        "hosts": list(hosts),
        "facts": chosen.facts,
        "where": [c.text for c in experiment.host_where],
        "hardware": [
            {
                "name": f.name,
                "provider": f.provider,
                "key": f.key,
                "required": list(chosen.required[f.name]),
            }
            for f in experiment.hardware
        ],
    }
    derived = (Derived("hosts", list(chosen.hosts), chosen.reason), *plan.derived)
    return attrs.evolve(plan, inventory=record, derived=derived)
