"""``benchlang import``: per-trial data from a CSV into a store."""

from __future__ import annotations

import argparse

from benchlang.app.importing import import_file
from benchlang.cli import add_command
from benchlang.run.importer import DEFAULT_COLUMNS, ROLES


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang import``; the lazy table in benchlang.cli calls this."""
    p.description = "Import a CSV with one row per trial into a store, so that results, analyze and order work on it. Defaults match OrderSage's per-trial files (test, order, run_seq, position, value)."
    p.add_argument("csv", metavar="FILE.csv")
    p.add_argument("--store", required=True)
    p.add_argument("--name", help="experiment name (default: the file name)")
    p.add_argument("--metric", default="value", help="metric name for the values (default: value)")
    p.add_argument("--better", choices=("lower", "higher"), default="lower")
    for role in ROLES:
        default = DEFAULT_COLUMNS[role]
        p.add_argument(
            f"--{role}-column",
            dest=role,
            default=default,
            help=f"column holding the {role}"
            + (f" (default: {default})" if default else " (default: none)"),
        )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    columns = {role: getattr(args, role) or None for role in ROLES}
    result = import_file(args.csv, args.store, columns, args.metric, args.better, args.name)
    print(
        f"imported {result.trials} trials of {result.configurations} configurations in {result.rounds} rounds as experiment {result.experiment} (plan {result.plan_hash[:19]}) into {args.store}"
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang import`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "import")
