"""``benchlang report``: one self-contained HTML page of a stored run (docs/report.md)."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from benchlang.cli import add_command


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang report``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Write one self-contained HTML page (no network, inline SVG plots and figures, each with its data) "
        "of a stored run: summary, TriScale timescales, order analysis, comparisons, stopping, "
        "profile, hosts and failed trials (docs/report.md)."
    )
    p.add_argument("store", metavar="STORE", help="the SQLite store of the run")
    p.add_argument(
        "rest",
        nargs="*",
        metavar="[STORE...] [SPEC]",
        help="more stores of the same experiment, read as the sessions of a campaign (the page "
        "covers them all: sessions are the top clusters of its KPIs and ranking, and a section "
        "shows each configuration's between-session share); and a spec to analyse with "
        "(default: the stored one)",
    )
    p.add_argument("--plan", help="plan hash (default: the spec's plan, else the store's latest)")
    p.add_argument(
        "-o",
        "--output",
        default="report.html",
        metavar="FILE",
        help="where to write the page (default: report.html)",
    )
    p.add_argument(
        "--no-figures",
        action="store_true",
        help="leave out the papers' figures (drawn with matplotlib; their tables stay)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlang.app.report import write_report

    if len(args.rest) > 1 or (args.rest and _is_store(args.rest[0])):
        return _campaign(args)
    args.spec = args.rest[0] if args.rest else None
    plan_hash, experiment, note = args.plan, None, None
    if args.spec is not None:  # app.plan imports the planner and backends: only for a spec
        from benchlang.app.plan import analysis_target

        target = analysis_target(args.store, args.spec, args.plan)
        plan_hash, experiment, note = target.plan_hash, target.experiment, target.note
        if note:
            print(f"note: {note}", file=sys.stderr)
    size, seconds = write_report(
        args.store, args.output, plan_hash, experiment, note, figures=not args.no_figures
    )
    print(f"wrote {args.output} ({size / 1024:.0f} KiB in {seconds:.1f} s)", file=_said_to(args))
    return 0


def _is_store(path: str) -> bool:
    from benchlang.app.stores import is_store

    return is_store(path)


def _campaign(args: argparse.Namespace) -> int:
    """Several stores: one page over the sessions of one experiment."""
    from benchlang.app.report import write_report
    from benchlang.cli.common import load_experiment
    from benchlang.cli.options import stores_and_spec

    stores, spec = stores_and_spec([args.store, *args.rest], None, "report")
    experiment = load_experiment(spec) if spec else None
    size, seconds = write_report(
        stores, args.output, args.plan, experiment, figures=not args.no_figures
    )
    print(
        f"wrote {args.output}: {len(stores)} sessions ({size / 1024:.0f} KiB in {seconds:.1f} s)",
        file=_said_to(args),
    )
    return 0


def _said_to(args: argparse.Namespace) -> TextIO:
    """Where "wrote ..." goes: standard output, unless the page itself went there (``-o
    /dev/stdout``, a pipe or a device): then standard error, so the page stays whole."""
    import os
    import stat

    try:
        regular = stat.S_ISREG(os.stat(args.output).st_mode)
    except (OSError, ValueError):
        regular = True
    return sys.stdout if regular else sys.stderr


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang report`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "report")
