"""``benchlang record``: the 12-parameter reproducibility record (TriScale §4.4)."""

from __future__ import annotations

import argparse
import sys

from benchlang.app.analysis import record_of
from benchlang.app.plan import analysis_target
from benchlang.cli import add_command
from benchlang.cli.options import store_and_spec, store_arguments
from benchlang.jsonout import document, dumps


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang record``; the lazy table in benchlang.cli calls this."""
    p.description = "Print the 12-parameter reproducibility record (TriScale, JSys 2021, §4.4) with spec and plan hashes, seed and benchlang version; --format methods prints a methods paragraph for a paper with its BibTeX references."
    store_arguments(
        p,
        "the store of the run (an SQLite file, told apart from the spec by its content) "
        "and the spec whose plan to describe (default: the latest plan in the store)",
        several=False,
    )
    p.add_argument("--plan", help="plan hash (default: the spec's plan, else the store's latest)")
    p.add_argument(
        "--format",
        choices=("json", "markdown", "latex", "methods"),
        help="default: a table in a terminal, Markdown otherwise (a pipe, a file)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    args.store, args.spec = store_and_spec(args.paths, args.store, "record")
    target = analysis_target(args.store, args.spec, args.plan)
    if target.note:
        print(f"note: {target.note}", file=sys.stderr)
    if args.format == "methods":
        from benchlang.app.report import methods_of

        print(methods_of(args.store, target.plan_hash, target.experiment), end="")
        return 0
    record = record_of(args.store, target.plan_hash, target.experiment)
    if args.format == "json":
        print(dumps(document("record", 1, record.to_json())))
    elif args.format == "latex":
        print(record.to_latex())
    elif args.format == "markdown":
        print(record.to_markdown())
    else:
        from benchlang.report.run_end import render_record

        render_record(record)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang record`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "record")
