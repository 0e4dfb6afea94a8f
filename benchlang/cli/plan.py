"""``benchlang plan``: the compiled plan, as a summary or as hashed JSON."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

import attrs

from benchlang.cli import add_command
from benchlang.cli.common import load_spec, open_backend
from benchlang.errors import UserError
from benchlang.plan.compile import compile_plan
from benchlang.plan.plan import PlanError
from benchlang.report.table import render_table


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang plan``; the lazy table in benchlang.cli calls this."""
    p.description = "Compile a spec into its plan: every trial with its series, round, position, host and configuration. Same spec and seed give the same plan, byte for byte."
    p.add_argument("spec", metavar="SPEC")
    p.add_argument(
        "--json", action="store_true", help="print the full plan as JSON with its content hash"
    )
    p.add_argument("--seed", type=int, help="override the spec's seed")
    p.set_defaults(func=run)


def build_plan(spec: str, seed: int | None = None):
    experiment = load_spec(spec)
    if seed is not None:
        experiment = attrs.evolve(experiment, seed=seed)
    backend = open_backend(experiment, spec)
    try:
        return experiment, backend, compile_plan(experiment, backend.hosts())
    except PlanError as err:
        raise UserError(f"{spec}: {err.message}", err.hint) from None


def run(args: argparse.Namespace) -> int:
    experiment, _backend, plan = build_plan(args.spec, args.seed)
    if args.json:
        sys.stdout.write(plan.json_text() + "\n")
        return 0
    print(f"experiment {experiment.name}" + (f": {experiment.title}" if experiment.title else ""))
    print(f"plan {plan.hash}  (seed {plan.seed}, spec {experiment.spec_hash[:19]})")
    render_table(
        ["", "value", "why"], [(d.name, d.value, d.reason) for d in plan.derived], title="derived"
    )
    per_host = Counter(plan.trial_host.tolist())
    render_table(
        ["host", "trials", "rounds"],
        [
            (h, per_host.get(i, 0), int((plan.round_host == i).sum()))
            for i, h in enumerate(plan.hosts)
        ],
        title="hosts",
    )
    shown = plan.configurations[:20]
    render_table(
        ["#", "configuration", "command"],
        [(c.index, c.label, c.command) for c in shown],
        title="configurations",
    )
    if len(plan.configurations) > len(shown):
        print(f"... and {len(plan.configurations) - len(shown)} more (benchlang plan --json)")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang plan`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "plan")
