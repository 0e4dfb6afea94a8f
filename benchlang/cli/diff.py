"""``benchlang diff``: before/after of the same spec on two stores; a regression gate."""

from __future__ import annotations

import argparse
import re

from benchlang.app.diff import diff_stores
from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.report.diff import render


def _margin(text: str) -> float:
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*%\s*", text)
    if not match or not 0 < float(match.group(1)) < 100:
        raise UserError(f"--margin {text!r} is not a percent in (0, 100)", "e.g. --margin 2%")
    return float(match.group(1)) / 100.0


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang diff``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Compare two stores of the same spec (before/after a commit, a kernel, a machine): "
        "each configuration's ratio B/A with a cluster-bootstrap interval. With --margin, a "
        "regression gate: exit 1 when a configuration is worse beyond the margin with "
        "confidence (docs/replicate.md)."
    )
    p.add_argument("store_a", metavar="STORE_A", help="before")
    p.add_argument("store_b", metavar="STORE_B", help="after")
    p.add_argument("--margin", help="equivalence margin, e.g. 2%%: turns diff into a gate")
    p.add_argument("--confidence", type=float, default=95.0, help="percent (default: 95)")
    p.add_argument("--plan-a", help="plan hash in STORE_A (default: its latest)")
    p.add_argument("--plan-b", help="plan hash in STORE_B (default: its latest)")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text", dest="form")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 50 <= args.confidence < 100:
        raise UserError(f"--confidence {args.confidence:g} is not a percent in [50, 100)")
    margin = _margin(args.margin) if args.margin is not None else None
    result = diff_stores(
        args.store_a,
        args.store_b,
        margin=margin,
        confidence=args.confidence,
        plan_a=args.plan_a,
        plan_b=args.plan_b,
    )
    print(render(result, args.form), end="")
    return 1 if result.regressions else 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang diff`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "diff")
