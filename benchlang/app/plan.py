"""Building a plan: the compiled experiment on its backend's hosts, with an optional seed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import attrs

from benchlang import model
from benchlang.app.inventory import gather_inventory, stored_inventory
from benchlang.app.spec import compile_spec, open_backend
from benchlang.backends.base import Backend
from benchlang.errors import UserError
from benchlang.plan.compile import compile_plan
from benchlang.plan.plan import Derived, Plan, PlanError, shape_of
from benchlang.run.store import Store, StoredPlan


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
    if experiment.design.span == "auto":
        experiment = resolve_span(experiment)
    backend = open_backend(experiment, spec_path)
    inventory = gather_inventory(backend) if experiment.needs_inventory else None
    try:
        return Planned(experiment, backend, compile_plan(experiment, backend.hosts(), inventory))
    except PlanError as err:
        raise UserError(f"{spec_path}: {err.message}", err.hint) from None


def resolve_span(experiment: model.Experiment) -> model.Experiment:
    """``span auto``: the longest span the spec's profile analyses recommend (TriScale §4.6:
    a series must cover the longest seasonal period of the conditions)."""
    from benchlang.app.profile import profile_spec_item
    from benchlang.report.record import format_duration

    found = []
    for item in experiment.profiles:
        profiled = profile_spec_item(item)
        if profiled.result.recommended_span is not None:
            found.append((profiled.result.recommended_span, item["name"]))
    if not found:
        names = ", ".join(item["name"] for item in experiment.profiles)
        raise UserError(
            f"span auto: the profile ({names}) found no seasonal period, so it recommends no span",
            "give the span yourself: design { span 1d }",
        )
    span, name = max(found)
    reason = f"auto: the longest seasonal period profile {name} found, {format_duration(span)}"
    design = attrs.evolve(experiment.design, span=span, span_reason=reason)
    return attrs.evolve(experiment, design=design)


def build_plan(spec_path: str | Path, seed: int | None = None) -> Planned:
    """Load a spec and plan it (warnings are dropped: callers that show them load first)."""
    return plan_experiment(compile_spec(spec_path).experiment, spec_path, seed)


class Target(NamedTuple):
    """The stored plan to analyse, and the experiment to analyse it with: None for the
    stored spec; the given spec's when it differs from the stored run's only in what does not
    shape the trials (its analysis, a KPI's confidence with the same sizes, comments)."""

    plan_hash: str | None
    experiment: model.Experiment | None = None
    note: str | None = None


def matching_plan(store: Store, plan: Plan) -> StoredPlan | None:
    """The stored plan that is ``plan``, or else runs the very same trials (latest first)."""
    plans = store.plans()
    for stored in plans:
        if stored.plan_hash == plan.hash:
            return stored
    for stored in reversed(plans):
        if shape_of(json.loads(stored.plan_json)) == plan.shape_hash:
            return stored
    return None


def adopt_stored_identity(plan: Plan, stored: StoredPlan) -> Plan:
    """``plan`` under the identity of the stored plan with the same trials (its hash)."""
    document = json.loads(stored.plan_json)
    derived = tuple(Derived(**d) for d in document.get("derived", []))
    adopted = plan.with_identity(document["spec_hash"], derived)
    if adopted.hash != stored.plan_hash:
        raise UserError(f"the stored plan {stored.plan_hash[:19]} could not be matched")
    return adopted


def analysis_target(
    store_path: str | Path, spec_path: str | Path | None, given: str | None
) -> Target:
    """The plan to read from a store: ``given`` (--plan); else the plan the spec compiles
    to, or the stored plan with the same trials (analysed with the spec); else None (the
    store's latest plan)."""
    if given or spec_path is None:
        return Target(given)
    experiment = compile_spec(spec_path).experiment
    if experiment.design.span == "auto":
        experiment = resolve_span(experiment)
    with Store(store_path) as store:
        found = stored_match(store, experiment, spec_path)
        if found is None:  # the store's own message: no plan of this hash (or none at all)
            hosts, inventory = stored_inventory(store.plan().plan_json)
            return Target(plan_offline(experiment, spec_path, hosts, inventory).hash)
    plan, stored = found
    if stored.plan_hash == plan.hash:
        return Target(plan.hash)
    return Target(
        stored.plan_hash,
        experiment,
        f"{spec_path} differs from the stored run's spec only in what does not shape its trials: "
        f"analysing the trials of plan {stored.plan_hash[:19]} with this spec",
    )


def plan_offline(
    experiment: model.Experiment,
    spec_path: str | Path,
    hosts: tuple[str, ...],
    inventory: dict[str, Any] | None = None,
) -> Plan:
    """The plan of an experiment on ``hosts`` (logical names a run stored) and the facts
    its plan recorded, without opening its backend: analysing a finished run must not call
    the cloud (docs/plugins.md)."""
    try:
        return compile_plan(experiment, hosts, inventory)
    except PlanError as err:
        raise UserError(f"{spec_path}: {err.message}", err.hint) from None


def stored_match(
    store: Store, experiment: model.Experiment, spec_path: str | Path
) -> tuple[Plan, StoredPlan] | None:
    """The stored plan this spec compiles to on the logical hosts of a stored run (or one
    with the same trials), with that plan; None when no stored run matches."""
    seen: set[str] = set()
    for stored in reversed(store.plans()):
        hosts, inventory = stored_inventory(stored.plan_json)
        key = json.dumps([hosts, inventory], sort_keys=True)
        if key in seen:
            continue
        seen.add(key)
        try:
            plan = plan_offline(experiment, spec_path, hosts, inventory)
        except UserError:
            continue
        match = matching_plan(store, plan)
        if match is not None:
            return plan, match
    return None
