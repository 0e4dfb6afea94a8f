"""``benchlang compare 'CMD' 'CMD' ...``: compare commands with no spec, as hyperfine does;
``benchlang compare SPEC --base REF``: a spec at two git revisions in one session."""

from __future__ import annotations

import argparse
import re
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
    from benchlang.app.revision_compare import MAX_ROUNDS, PILOT_ROUNDS

    p.description = (
        "Compare shell commands without writing a spec: every round runs each command once, in "
        "random order; the answer is the ranking by median wall time with intervals that hold "
        "jointly, user and system time beside it. hyperfine's options keep their meaning. "
        "--spec-out writes the spec it ran. The second form, compare SPEC.bench --base REF "
        "[--head REF], builds both revisions in git worktrees and runs the spec once with the "
        "revision as a factor (both in every round, random order, one session): per "
        "configuration head/base with an interval, one family over the suite, a verdict "
        "against --margin, exit 1 on any worse. A .bench file with --base selects this form "
        "(its options are in their own group below; the others belong to the command form), "
        "so the two never mix (docs/cli.md#compare)."
    )
    p.add_argument(
        "commands", nargs="+", metavar="COMMAND", help="a shell command to measure (or SPEC.bench)"
    )
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
    revisions = p.add_argument_group("compare SPEC.bench --base REF: two git revisions")
    revisions.add_argument("--base", metavar="REF", help="the revision compared against")
    revisions.add_argument("--head", metavar="REF", help="the revision judged (default: HEAD)")
    revisions.add_argument("--build", metavar="CMD", help="run in each revision's worktree first")
    revisions.add_argument(
        "--margin",
        default="2%",
        help="worse/better beyond it, equivalent inside it (default: 2%%)",
    )
    revisions.add_argument("--summary", metavar="FILE", help="write a Markdown summary for a PR")
    revisions.add_argument("--json", action="store_true", help="one strict JSON document")
    revisions.add_argument("--keep", metavar="DIR", help="keep the session's store in DIR")
    revisions.add_argument(
        "--rounds",
        metavar="N|auto",
        help="the rounds: N, or auto (Stein's two-stage: a pilot's spread sizes the rest for "
        "the margin at 80%% power); default: the spec's runs if it fixes them, else auto",
    )
    revisions.add_argument(
        "--pilot",
        type=int,
        metavar="N",
        help=f"rounds of the pilot with --rounds auto (default: {PILOT_ROUNDS})",
    )
    revisions.add_argument(
        "--max-rounds",
        type=int,
        metavar="N",
        help=f"--rounds auto: at most N rounds in all (default: {MAX_ROUNDS})",
    )
    revisions.add_argument(
        "--max-time",
        metavar="DURATION",
        help="--rounds auto: at most the rounds that fit in DURATION (e.g. 10m), from the "
        "pilot's round time",
    )
    p.set_defaults(func=run)


REVISION_ONLY = (
    "head",
    "build",
    "summary",
    "json",
    "keep",
    "rounds",
    "pilot",
    "max_rounds",
    "max_time",
)
COMMAND_ONLY = ("prepare", "spec_out", "store", "export_json", "export_csv", "export_markdown")


def _margin(text: str) -> float:
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*%\s*", text)
    if not match or not 0 < float(match.group(1)) < 100:
        raise UserError(f"--margin {text!r} is not a percent in (0, 100)", "e.g. --margin 2%")
    return float(match.group(1)) / 100.0


def _sizing(args: argparse.Namespace) -> dict:
    """--rounds, --pilot, --max-rounds and --max-time as compare_revisions takes them."""
    from benchlang.app.revision_compare import PILOT_ROUNDS

    out: dict = {}
    if args.rounds is not None:
        text = args.rounds.strip()
        if text != "auto" and not (text.isdigit() and int(text) >= 2):
            raise UserError(f"--rounds {args.rounds!r} is not auto or a number >= 2")
        out["rounds"] = text if text == "auto" else int(text)
    auto_only = [o for o in ("pilot", "max_rounds", "max_time") if getattr(args, o) is not None]
    if auto_only and isinstance(out.get("rounds"), int):
        raise UserError(f"--{auto_only[0].replace('_', '-')} sizes --rounds auto, not --rounds N")
    if args.pilot is not None:
        if args.pilot < 2:
            raise UserError(f"--pilot {args.pilot}: Stein's pilot needs 2 rounds or more")
        out["pilot"] = args.pilot
    if args.max_rounds is not None:
        if args.max_rounds < (args.pilot or PILOT_ROUNDS):
            raise UserError(f"--max-rounds {args.max_rounds} is below the pilot's rounds")
        out["max_rounds"] = args.max_rounds
    if args.max_time is not None:
        from benchlang.lang.to_ast import parse_duration

        try:
            out["max_time"] = parse_duration(args.max_time.strip())
        except ValueError:
            raise UserError(f"--max-time {args.max_time!r} is not a duration", "e.g. 10m") from None
    return out


def _revisions(args: argparse.Namespace) -> int:
    """``compare SPEC --base REF``: exit 1 on any worse; 2 on a usage or build error, or a
    configuration measured at neither or one revision only (nothing to judge); else 0."""
    from benchlang.app.revision_compare import compare_revisions
    from benchlang.report.revision_compare_text import markdown, render

    spec = args.commands[0]
    if len(args.commands) != 1 or not spec.endswith(".bench"):
        raise UserError(
            "--base compares one spec at two revisions: give one SPEC.bench",
            "benchlang compare SPEC.bench --base REF, or leave out --base to compare commands",
        )
    given = [o for o in COMMAND_ONLY if getattr(args, o)] + ["-L"] * bool(args.parameter_list)
    given += ["runs"] * (args.runs != DEFAULT_ROUNDS) + ["warmup"] * bool(args.warmup)
    if given:
        raise UserError(
            f"--{given[0].replace('_', '-')} is for comparing commands, not revisions",
            "the rounds are the spec's design, or --rounds N|auto",
        )
    margin = _margin(args.margin)
    result = compare_revisions(
        spec,
        args.base,
        args.head,
        build_command=args.build,
        margin=margin,
        keep=args.keep,
        **_sizing(args),
    )
    if args.summary:
        from benchlang.report.atomic import write_atomic

        try:
            write_atomic(args.summary, markdown(result))
        except OSError as err:
            raise UserError(f"cannot write {args.summary}: {err.strerror}") from None
    if args.json:
        from benchlang.jsonout import document, dumps

        print(dumps(document("compare.revisions", 1, result.to_dict())))
    else:
        print(render(result))
    if result.worse:
        return 1
    if result.unmeasured:
        print("benchlang: error: " + result.notes[-1], file=sys.stderr)
        return 2
    return 0


def run(args: argparse.Namespace) -> int:
    if args.base is not None:
        return _revisions(args)
    first = args.commands[0]
    if first.endswith(".bench") and Path(first).is_file():
        raise UserError(
            f"{first} is a spec: compare SPEC needs --base REF (the revision to compare against)",
            f"benchlang compare {first} --base main, or benchlang run {first}",
        )
    extra = [o for o in REVISION_ONLY if getattr(args, o)] + ["margin"] * (args.margin != "2%")
    if extra:
        raise UserError(
            f"--{extra[0].replace('_', '-')} needs --base REF (compare SPEC.bench --base REF)"
        )
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
