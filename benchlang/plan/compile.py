"""Compile a validated Experiment into a Plan. Pure and deterministic: same spec and seed,
same plan, byte for byte (all randomness from benchlang.design.streams)."""

from __future__ import annotations

from collections.abc import Sequence

from benchlang import model
from benchlang.plan.ab_plan import compile_layout_plan
from benchlang.plan.configurations import configurations, placeholder_values, substitute
from benchlang.plan.factorial import compile_factorial_plan
from benchlang.plan.plan import Plan

__all__ = ["compile_plan", "configurations", "placeholder_values", "substitute"]


def compile_plan(experiment: model.Experiment, hosts: Sequence[str] = ("local",)) -> Plan:
    """The plan of an experiment on these host names: an A/B layout or a factorial design."""
    if experiment.design.layout is not None:
        return compile_layout_plan(experiment, hosts)
    return compile_factorial_plan(experiment, hosts)
