"""``benchlang record``: the 12-parameter reproducibility record (TriScale §4.4)."""

from __future__ import annotations

import argparse
import json

from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.report.analysis import analyze, build_record
from benchlang.report.data import load_data
from benchlang.run.store import Store


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang record``; the lazy table in benchlang.cli calls this."""
    p.description = "Print the 12-parameter reproducibility record (TriScale, JSys 2021, §4.4) with spec and plan hashes, seed and benchlang version."
    p.add_argument("spec", nargs="?", metavar="SPEC")
    p.add_argument("--store", required=True)
    p.add_argument("--plan")
    p.add_argument("--format", choices=("json", "markdown", "latex"), default="markdown")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    plan_hash = args.plan
    if args.spec and not plan_hash:
        from benchlang.cli.plan import build_plan

        plan_hash = build_plan(args.spec)[2].hash
    with Store(args.store) as store:
        data = load_data(store, plan_hash)
    if not data.experiment.kpis:
        raise UserError("the record needs at least one kpi in the spec")
    record = build_record(data, analyze(data))
    if args.format == "json":
        print(json.dumps(record.to_json(), indent=2, default=str))
    elif args.format == "latex":
        print(record.to_latex())
    else:
        print(record.to_markdown())
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang record`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "record")
