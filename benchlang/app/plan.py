"""Building a plan: the compiled experiment on its backend's hosts, with an optional seed."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import attrs

from benchlang import model
from benchlang.app.spec import load_spec, open_backend
from benchlang.backends.base import Backend
from benchlang.errors import UserError
from benchlang.plan.compile import compile_plan
from benchlang.plan.plan import Plan, PlanError


class Planned(NamedTuple):
    """What a run needs: the experiment (seed applied), its open backend and the plan."""

    experiment: model.Experiment
    backend: Backend
    plan: Plan


def plan_experiment(
    experiment: model.Experiment, spec_path: str | Path, seed: int | None = None
) -> Planned:
    """Plan an already loaded experiment; ``seed`` overrides the spec's seed."""
    if seed is not None:
        experiment = attrs.evolve(experiment, seed=seed)
    backend = open_backend(experiment, spec_path)
    try:
        return Planned(experiment, backend, compile_plan(experiment, backend.hosts()))
    except PlanError as err:
        raise UserError(f"{spec_path}: {err.message}", err.hint) from None


def build_plan(spec_path: str | Path, seed: int | None = None) -> Planned:
    """Load a spec and plan it (warnings are dropped: callers that show them load first)."""
    return plan_experiment(load_spec(spec_path).experiment, spec_path, seed)


def plan_hash(spec_path: str | Path | None, given: str | None) -> str | None:
    """The plan to read from a store: ``given`` (--plan), else the plan the spec compiles to,
    else None (the store's latest plan)."""
    if given or spec_path is None:
        return given
    return build_plan(spec_path).plan.hash
