"""``benchlang profile``: seasonal components of network condition data (TriScale §4.6)."""

from __future__ import annotations

import argparse
import math

from benchlang.app.profile import profile_csv
from benchlang.cli import add_command
from benchlang.cli.common import render_profile
from benchlang.errors import UserError
from benchlang.jsonout import document, dumps


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang profile``; the lazy table in benchlang.cli calls this."""
    p.description = "Autocorrelation of condition data sampled every PERIOD, its seasonal peaks and the series span to use (TriScale, JSys 2021, §4.6)."
    p.add_argument("file", metavar="FILE", help="CSV file, one sample per row")
    p.add_argument("--period", required=True, help="sampling period: 30s, 5m, 2h, 1d, 1w")
    p.add_argument("--column", help="column name (with a header) or 1-based number")
    p.add_argument("--max-lag", type=int, help="largest lag examined (default N/3)")
    p.add_argument("--json", action="store_true", help="print a JSON object")
    p.set_defaults(func=run)


def _period(text: str) -> float:
    from benchlang.lang.to_ast import parse_duration

    try:
        seconds = parse_duration(text.strip())
    except ValueError:
        seconds = math.nan
    if not seconds > 0:
        raise UserError(f"--period {text!r} is not a positive duration", "use e.g. 30s, 5m, 2h, 1d")
    return seconds


def run(args: argparse.Namespace) -> int:
    seconds = _period(args.period)
    if args.max_lag is not None and args.max_lag < 2:
        raise UserError(f"--max-lag must be at least 2, got {args.max_lag}")
    profiled = profile_csv(args.file, args.column, seconds, args.max_lag)
    if args.json:
        print(
            dumps(
                document(
                    "profile",
                    1,
                    {"file": args.file, "column": profiled.column, **profiled.result.to_dict()},
                )
            )
        )
        return 0
    render_profile(profiled)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang profile`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "profile")
