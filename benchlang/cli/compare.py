"""``benchlang compare 'CMD' 'CMD' ...``: compare commands with no spec, as hyperfine does."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from benchlang.app.quick_compare import (
    DEFAULT_ROUNDS,
    MIN_KPI_ROUNDS,
    CompareRequest,
    compare_spec_text,
    workdir_for,
)
from benchlang.cli import add_command, build_parser
from benchlang.errors import UserError


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang compare``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Compare shell commands without writing a spec: every round runs each command once, in "
        "random order; the answer is the ranking by median wall time with intervals that hold "
        "jointly, user and system time beside it. hyperfine's options keep their meaning. "
        "--spec-out writes the spec it ran (docs/cli.md#compare)."
    )
    p.add_argument("commands", nargs="+", metavar="COMMAND", help="a shell command to measure")
    p.add_argument(
        "--runs",
        "-r",
        type=int,
        default=DEFAULT_ROUNDS,
        metavar="N",
        help=f"rounds: each command runs N measured times (default: {DEFAULT_ROUNDS})",
    )
    p.add_argument(
        "--warmup",
        "-w",
        type=int,
        default=0,
        metavar="N",
        help="untimed runs of each command first, left out of the analysis (default: 0)",
    )
    p.add_argument(
        "--prepare", "-p", metavar="CMD", help="run before every timed run, not timed itself"
    )
    p.add_argument(
        "--parameter-list",
        "-L",
        nargs=2,
        action="append",
        default=[],
        metavar=("NAME", "VALUES"),
        help="run each command once per comma-separated value, put in for {NAME}",
    )
    p.add_argument(
        "-N",
        dest="shell",
        action="store_const",
        const="none",
        help="the same as --shell=none",
    )
    p.add_argument(
        "--shell",
        "-S",
        choices=("none", "sh"),
        default="sh",
        help="none: refuse a command that needs a shell (it runs without one either way when "
        "it has no shell syntax; with it, /bin/sh -c); default: sh",
    )
    p.add_argument("--seed", type=int, default=1, help="the plan's seed (default: 1)")
    p.add_argument("--store", metavar="PATH", help="keep the trials in this store")
    p.add_argument(
        "--spec-out", metavar="FILE.bench", help="write the spec it runs (to keep or extend)"
    )
    for form in ("json", "csv", "markdown"):
        p.add_argument(f"--export-{form}", metavar="FILE", help=f"also write {form} (as `run`)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.add_argument(
        "--ignore-failure",
        "-i",
        action="store_true",
        help="exit 0 even when a command fails (failed runs are stored and reported)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    request = CompareRequest(
        commands=tuple(args.commands),
        rounds=args.runs,
        warmup=args.warmup,
        prepare=args.prepare,
        parameters=tuple((name, tuple(values.split(","))) for name, values in args.parameter_list),
        shell=args.shell != "none",
        seed=args.seed,
    )
    if args.runs < MIN_KPI_ROUNDS:
        print(
            f"note: with --runs {args.runs} (fewer than {MIN_KPI_ROUNDS}) there is no median bound "
            "and no ranking: TriScale's sizing needs 5 runs for a median at 95%",
            file=sys.stderr,
        )
    with tempfile.TemporaryDirectory(prefix="benchlang-compare-") as scratch:
        spec = Path(args.spec_out) if args.spec_out else Path(scratch) / "compare.bench"
        text = compare_spec_text(request, workdir_for(spec, Path.cwd()))
        try:
            spec.write_text(text, encoding="utf-8")
        except OSError as err:
            raise UserError(f"cannot write {spec}: {err.strerror}") from None
        if args.spec_out:
            print(f"wrote the spec to {spec} (benchlang run {spec} runs it again)", file=sys.stderr)
        store = args.store or str(Path(scratch) / "compare.sqlite")
        argv = ["run", str(spec), "--store", store]
        argv += ["-q"] * args.quiet + ["-i"] * args.ignore_failure
        for form in ("json", "csv", "markdown"):
            if getattr(args, f"export_{form}"):
                argv += [f"--export-{form}", getattr(args, f"export_{form}")]
        run_args = build_parser().parse_args(argv)
        run_args.store_kept = bool(args.store)
        status = int(run_args.func(run_args) or 0)
    if not args.store:
        print(
            "note: the trials were in a temporary store, now removed: keep them with --store "
            "PATH (and the spec with --spec-out FILE.bench)",
            file=sys.stderr,
        )
    return status


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang compare`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "compare")
