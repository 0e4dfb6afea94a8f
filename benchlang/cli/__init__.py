"""The command line: thin wrappers that call lang, plan, run, stats and report.

Each command lives in its own module with ``add_parser(subparsers)``; the module sets
``func`` on its parser, a function ``(args) -> int`` returning the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from benchlang import __version__
from benchlang.cli.common import SpecFailed
from benchlang.errors import UserError

COMMANDS = (
    "check",
    "plan",
    "run",
    "results",
    "analyze",
    "record",
    "order",
    "import_data",
    "size",
    "profile",
    "stopping_eval",
    "simulate_aa",
    "advise",
    "plugins",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchlang",
        description="Rigorous performance experiments from a .bench spec.",
    )
    parser.add_argument("--version", action="version", version=f"benchlang {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"benchlang.cli.{name}").add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except SpecFailed:
        return 2
    except UserError as err:
        print(f"benchlang: error: {err.message}", file=sys.stderr)
        if err.hint:
            print(f"  hint: {err.hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("benchlang: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
