"""``benchlang report``: one self-contained HTML page of a stored run (docs/report.md)."""

from __future__ import annotations

import argparse
import sys

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
        "spec", nargs="?", metavar="SPEC", help="analyse with this spec (default: the stored one)"
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
    print(f"wrote {args.output} ({size / 1024:.0f} KiB in {seconds:.1f} s)")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang report`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "report")
