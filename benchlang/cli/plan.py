"""``benchlang plan``: the compiled plan, as a summary or as hashed JSON."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from benchlang.app.plan import build_plan as build_plan  # re-exported for tests and tools
from benchlang.app.plan import plan_experiment
from benchlang.cli import add_command
from benchlang.cli.common import load_experiment
from benchlang.report.table import render_table


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang plan``; the lazy table in benchlang.cli calls this."""
    p.description = "Compile a spec into its plan: every trial with its series, round, position, host and configuration. Same spec and seed give the same plan, byte for byte."
    p.add_argument("spec", metavar="SPEC", help="the .bench spec to compile")
    p.add_argument(
        "--json", action="store_true", help="print the full plan as JSON with its content hash"
    )
    p.add_argument("--seed", type=int, help="override the spec's seed")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    experiment, _backend, plan = plan_experiment(load_experiment(args.spec), args.spec, args.seed)
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
