"""``benchlang import``: another tool's results (hyperfine, pyperf, a per-trial CSV) into a store."""

from __future__ import annotations

import argparse

from benchlang.cli import add_command
from benchlang.report.wording import plural
from benchlang.run.importers.csv_columns import DEFAULT_COLUMNS, ROLES


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang import``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Import another tool's results into a store, so that results, analyze, order and diff "
        "work on them: hyperfine --export-json, pyperf JSON, pytest-benchmark "
        "--benchmark-json, Google Benchmark JSON, criterion.rs's target/criterion, asv results "
        "with samples, or a CSV with one row per trial (OrderSage's columns by default: test, "
        "order, run_seq, position, value). The format is recognized from the file; --format "
        "names it (plugins add formats; docs/importing.md)."
    )
    p.add_argument(
        "file",
        metavar="FILE",
        help="a tool's result file (JSON, a per-trial CSV) or criterion's directory",
    )
    p.add_argument("--store", required=True, help="the SQLite store to create (or add a plan to)")
    p.add_argument("--format", dest="tool", help="importer name (default: recognized)")
    p.add_argument("--name", help="experiment name (default: the file name)")
    csv = p.add_argument_group("CSV files")
    csv.add_argument("--metric", default="value", help="metric name (default: value)")
    csv.add_argument(
        "--better",
        choices=("lower", "higher"),
        default="lower",
        help="which direction is better for the imported metrics (default: lower)",
    )
    for role in ROLES:
        default = DEFAULT_COLUMNS[role]
        csv.add_argument(
            f"--{role}-column",
            dest=role,
            default=default,
            help=f"column holding the {role}"
            + (f" (default: {default})" if default else " (default: none)"),
        )
    p.set_defaults(func=run, exit_at_once=True)  # cli.leave: the store is closed when run returns


def run(args: argparse.Namespace) -> int:
    """Import the file. numpy and the importers load here, not with the parser: the lazy
    parser imports a command's module deep in argparse's calls, where CPython 3.11's frame
    stack crossed a 16 KiB chunk's end about 800 times while numpy's modules loaded (an
    ``mmap``/``munmap`` pair each, 5-7 ms of a 10k-row import; docs/benchmarks.md)."""
    from benchlang.app.importing import import_file

    options = {
        "columns": {role: getattr(args, role) or None for role in ROLES},
        "metric": args.metric,
        "better": args.better,
    }
    result = import_file(args.file, args.store, options, args.name, args.tool)
    failed = f", {result.failed} failed" if result.failed else ""
    print(
        f"imported {plural(result.trials, 'trial')}{failed} of "
        f"{plural(result.configurations, 'configuration')} in {plural(result.rounds, 'round')} "
        f"from {result.tool} as experiment {result.experiment} "
        f"(plan {result.plan_hash[:19]}) into {args.store}"
    )
    for note in result.notes:
        print(f"note: {note}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang import`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "import")
