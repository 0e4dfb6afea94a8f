"""``benchlang diff``: before/after of one spec, one store per session; a regression gate."""

from __future__ import annotations

import argparse
import re

from benchlang.app.diff import diff_across_sessions
from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.report.diff_text import render

_USAGE = "benchlang diff A B, or benchlang diff --base A1 A2 A3 --new B1 B2 B3"


def _margin(text: str) -> float:
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*%\s*", text)
    if not match or not 0 < float(match.group(1)) < 100:
        raise UserError(f"--margin {text!r} is not a percent in (0, 100)", "e.g. --margin 2%")
    return float(match.group(1)) / 100.0


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang diff``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Compare stores of the same spec (before/after a commit, a kernel, a machine), each "
        "store one session: each configuration's ratio B/A with an interval. With at least 3 "
        "sessions per side (--base, --new) the interval carries the spread between sessions; "
        "with fewer it is within session only and decides nothing. With --margin, a regression "
        "gate: exit 1 when a configuration is worse beyond the margin with confidence "
        "(docs/replicate.md)."
    )
    p.add_argument("stores", nargs="*", metavar="STORE", help="STORE_A STORE_B: one session a side")
    p.add_argument("--base", nargs="+", metavar="STORE", help="the sessions before")
    p.add_argument("--new", nargs="+", metavar="STORE", help="the sessions after")
    p.add_argument("--margin", help="equivalence margin, e.g. 2%%: turns diff into a gate")
    p.add_argument(
        "--confidence",
        type=float,
        default=95.0,
        help="percent (default: 95); with --margin the equivalence test (TOST) prints the "
        "1 - 2 alpha interval, 90%% for 95 (Schuirmann 1987)",
    )
    p.add_argument("--allow-missing", action="store_true",
                   help="compare the configurations every store holds; name the others")  # fmt: skip
    p.add_argument("--history", metavar="H",
                   help="with fewer than 3 sessions a side: a history of this machine class "
                   "(benchlang history add) to borrow the run-to-run spread from")  # fmt: skip
    p.add_argument("--plan-a", help="plan hash in the A stores (default: each one's latest)")
    p.add_argument("--plan-b", help="plan hash in the B stores (default: each one's latest)")
    p.add_argument(
        "--format",
        choices=("text", "markdown", "json"),
        default="text",
        dest="form",
        help="text for a terminal, markdown for a PR comment, json (default: text)",
    )
    p.add_argument("--json", action="store_true", help="the same as --format json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 50 <= args.confidence < 100:
        raise UserError(f"--confidence {args.confidence:g} is not a percent in [50, 100)")
    if args.stores and (args.base or args.new):
        raise UserError("give STORE_A STORE_B or --base/--new, not both", _USAGE)
    if args.stores:
        if len(args.stores) != 2:
            raise UserError(f"diff takes two stores, got {len(args.stores)}", _USAGE)
        base, new = [args.stores[0]], [args.stores[1]]
    elif not (args.base and args.new):
        raise UserError("diff needs the stores of both sides", _USAGE)
    else:
        base, new = args.base, args.new
    margin = _margin(args.margin) if args.margin is not None else None
    result = diff_across_sessions(
        base,
        new,
        margin=margin,
        confidence=args.confidence,
        plan_a=args.plan_a,
        plan_b=args.plan_b,
        allow_missing=args.allow_missing,
        history=args.history,
    )
    print(render(result, "json" if args.json else args.form), end="")
    return 1 if result.regressions else 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang diff`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "diff")
