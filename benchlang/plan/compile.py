"""Compile a validated Experiment into a Plan. Pure and deterministic: same spec and seed,
same plan, byte for byte (all randomness from benchlang.design.streams)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from benchlang import model
from benchlang.plan.ab_plan import compile_layout_plan
from benchlang.plan.configurations import configurations, placeholder_values, substitute
from benchlang.plan.factorial import compile_factorial_plan
from benchlang.plan.inventory import Inventory, select_hosts
from benchlang.plan.plan import Derived, Plan, PlanError
from benchlang.plan.redundancy import fixed_groups
from benchlang.plan.warmup import with_warmup

__all__ = ["compile_plan", "configurations", "placeholder_values", "substitute"]


def compile_plan(
    experiment: model.Experiment,
    hosts: Sequence[str] = ("local",),
    inventory: Inventory | None = None,
) -> Plan:
    """The plan of an experiment on these host names: an A/B layout or a factorial design.

    A spec with hardware factors or ``hosts where`` needs ``inventory`` (each host's facts):
    the plan runs on the hosts plan.inventory selects and records the facts it read."""
    plan = _compile(experiment, hosts, inventory)
    plan = plan if experiment.design.layout is not None else with_warmup(plan, experiment)
    limits = machine_limits(experiment)
    return plan if limits is None else attrs.evolve(plan, machine=limits)


def _limits(machine: model.Machine) -> dict[str, Any]:
    out: dict[str, Any] = {"cpus": list(machine.cpus)} if machine.cpus else {}
    for key in ("memory", "cpu_time", "cpu_quota"):
        if getattr(machine, key) is not None:
            out[key] = getattr(machine, key)
    return out


def machine_limits(experiment: model.Experiment) -> dict[str, Any] | None:
    """plan.machine: the per-trial limits of the machine block; None without a limit (a block
    that only requires host state leaves the plan as it was)."""
    limits = _limits(experiment.machine) if experiment.machine is not None else {}
    return limits or None


def _compile(
    experiment: model.Experiment, hosts: Sequence[str], inventory: Inventory | None
) -> Plan:
    copies = experiment.design.redundancy
    if not experiment.needs_inventory:
        if experiment.design.layout is not None:
            return compile_layout_plan(experiment, hosts)
        if copies > 1:
            group = fixed_groups(hosts, copies, experiment.hosts.kind)
            plan = compile_factorial_plan(experiment, group, groups=(group,))
            return _redundant(plan, copies, (group,))
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
        plan = compile_factorial_plan(experiment, chosen.hosts, levels, chosen.groups)
        if chosen.groups is not None:
            plan = _redundant(plan, copies, chosen.groups)
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


def _redundant(plan: Plan, copies: int, groups: Sequence[Sequence[str]]) -> Plan:
    """The plan with its groups of equal hosts recorded (plan.redundancy) and explained."""
    shown = "; ".join(", ".join(g) for g in groups)
    derived = Derived(
        "redundancy",
        copies,
        f"every configuration on {copies} equal hosts, each running all its rounds "
        f"(DataMill's purposeful redundancy, de Oliveira et al. ICPE 2013 §4.2): {shown}; a host "
        "that stops leaves its rounds to the other hosts of its group",
    )
    return attrs.evolve(
        plan,
        redundancy={"copies": copies, "groups": [list(g) for g in groups]},
        derived=(*plan.derived, derived),
    )
