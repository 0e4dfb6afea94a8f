"""Every distinct command line a run of a plan would execute, built as the executor builds
them (the same helpers, the same substitutions), so that a reader can be shown what a
stranger's bundle runs before it runs (docs/replicate.md)."""

from __future__ import annotations

from benchlang import model
from benchlang.backends.base import Backend, capabilities_of
from benchlang.lang.shell import parse_template
from benchlang.plan.configurations import placeholder_values, substitute
from benchlang.plan.plan import Plan
from benchlang.run import cachegrind
from benchlang.run.counters import perf_command, probe_command
from benchlang.run.hidden import CAN_DROP, drop_caches_command, reboots


def commands_of(
    experiment: model.Experiment, plan: Plan, backend: Backend | None = None
) -> list[tuple[str, str]]:
    """(what, command) for every distinct command line, in the order a host meets them:
    checks, setup, per round (reboot, reset), per trial (hooks, the benchmark), teardown.
    A provider's power action (``backend``'s ``power``) is listed as ``power: ACTION``."""
    hidden = {h.name: h for h in experiment.hidden}
    benchmarks = {b.name: b for b in experiment.benchmarks}
    out: dict[tuple[str, str], None] = {}

    def add(what: str, command: str | None) -> None:
        if command:
            out[(what, command)] = None

    def fixed(template: str | None) -> str | None:
        return template and substitute(template, placeholder_values(experiment, ()))

    def powered(action: str) -> bool:
        return (
            backend is not None and action in capabilities_of(backend) and hasattr(backend, "power")
        )

    if any(h.kind == "drop_caches" for h in hidden.values()):
        add("check", CAN_DROP)
    counted = [m for b in experiment.benchmarks for m in b.counters]
    if counted:
        add("check", probe_command(counted))
    if any(b.simulated for b in experiment.benchmarks):
        add("check", cachegrind.probe_command())
    add("setup", fixed(experiment.setup))
    for c in plan.configurations:
        bench = benchmarks[c.benchmark]
        if bench.setup:
            add(
                f"setup of {bench.name}",
                substitute(bench.setup, placeholder_values(experiment, c.levels)),
            )
    bounds = plan.round_bounds
    reset = experiment.reset
    for r in range(plan.n_rounds):
        first = int(bounds[r])
        if first >= int(bounds[r + 1]):
            continue
        if reboots(hidden, plan.plan_levels(first)):
            add("reboot", "power: reboot" if powered("reboot") else "reboot")
        if reset is not None:
            if reset.power is not None and (reset.power != "reboot" or powered("reboot")):
                add("reset", f"power: {reset.power}")
            else:
                add("reset", _reset_command(experiment, plan, reset, first))
    exp_before, exp_after = fixed(experiment.before), fixed(experiment.after)
    for t in range(plan.n_trials):
        config = plan.configurations[int(plan.trial_configuration[t])]
        bench = benchmarks[config.benchmark]
        values = placeholder_values(experiment, config.levels)
        drawn = plan.plan_levels(t)
        values.update((k, v) for k, v in drawn.items() if k in hidden)
        add("before", drop_caches_command(hidden, drawn))
        add("before", exp_before)
        add(f"before {bench.name}", bench.before and substitute(bench.before, values))
        command = parse_template(bench.command).render(values) if bench.hidden else config.command
        if bench.simulated:
            command = cachegrind.cachegrind_command(command)
        add(
            f"run {bench.name}",
            perf_command(command, bench.counters) if bench.counters else command,
        )
        add(f"after {bench.name}", bench.after and substitute(bench.after, values))
        add("after", exp_after)
    add("teardown", fixed(experiment.teardown))
    return list(out)


def _reset_command(experiment: model.Experiment, plan: Plan, reset: model.Reset, first: int) -> str:
    if not reset.command:
        return "reboot"
    config = plan.configurations[int(plan.trial_configuration[first])]
    version = (
        tuple((k, v) for k, v in config.levels if k == model.VERSION_FACTOR) if plan.layout else ()
    )
    return substitute(reset.command, placeholder_values(experiment, version))
