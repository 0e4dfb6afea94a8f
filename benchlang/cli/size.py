"""``benchlang size``: the minimal number of samples for a percentile bound (TriScale §4.5),
or with ``--two-sided`` for the equal-tailed interval (Hahn & Meeker, Statistical Intervals, §5.2)."""

from __future__ import annotations

import argparse

from benchlang.cli import add_command
from benchlang.cli.options import percent_argument
from benchlang.errors import UserError
from benchlang.jsonout import document, dumps
from benchlang.stats.sizing import sizing


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang size``; the lazy table in benchlang.cli calls this."""
    p.description = "Minimal N such that a one-sided confidence bound of the given percentile exists at the given confidence (TriScale, JSys 2021, §4.5, Eq. 4); with --two-sided, the equal-tailed two-sided interval (kpi ... bound both), each side at (1 + C)/2. Comparing k configurations, the ranking's intervals hold jointly over all k(k-1)/2 pairs: at k = 10 that took about twice the rounds for the power of one comparison (docs/statistics.md, 'The ranking is one family')."
    p.add_argument(
        "--percentile", required=True, type=percent_argument, help="percentile in (0, 100)"
    )
    p.add_argument(
        "--confidence",
        required=True,
        type=percent_argument,
        help="confidence in (0, 100), e.g. 95 or 95%%",
    )
    p.add_argument("--exclude", type=int, default=0, help="extreme samples excluded (default 0)")
    p.add_argument(
        "--two-sided",
        action="store_true",
        help="size the equal-tailed two-sided interval (6 for the median at 95%%, 72 for p95)",
    )
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.exclude < 0:
        raise UserError("--exclude must be a non-negative integer")
    n = sizing(args.percentile, args.confidence, args.exclude, args.two_sided)
    if args.json:
        print(
            dumps(
                document(
                    "size",
                    1,
                    {
                        "n": n,
                        "percentile": args.percentile,
                        "confidence": args.confidence,
                        "exclude": args.exclude,
                        "two_sided": args.two_sided,
                    },
                )
            )
        )
    else:
        print(n)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang size`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "size")
