"""``benchlang fmt``: rewrite specs in the canonical layout (docs/fmt.md); ``--check`` for CI."""

from __future__ import annotations

import argparse
import sys

from benchlang.cli import add_command


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang fmt``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Rewrite specs in benchlang's canonical layout, keeping every comment. A spec with a "
        "syntax error is left untouched and its errors printed (exit 2)."
    )
    p.add_argument("files", nargs="+", metavar="FILE", help=".bench file(s); - for stdin")
    p.add_argument(
        "--check",
        action="store_true",
        help="change nothing; name the files that are not formatted and exit 1 if any",
    )
    p.add_argument(
        "--diff", action="store_true", help="change nothing; print what formatting would change"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlang.app.formatting import STDIN, format_spec, write_formatted
    from benchlang.lang.diagnostics import SpecError

    failed = unformatted = rewritten = 0
    for path in args.files:
        try:
            formatted = format_spec(path)
        except SpecError as err:
            print(str(err), file=sys.stderr)
            failed += 1
            continue
        except OSError as err:
            print(f"benchlang: error: cannot read {path}: {err.strerror}", file=sys.stderr)
            failed += 1
            continue
        if args.diff:
            sys.stdout.write(formatted.diff())
        if path == STDIN and not (args.check or args.diff):
            sys.stdout.write(formatted.after)
        elif not formatted.changed:
            continue
        elif args.check or args.diff:
            unformatted += 1
            if args.check:
                print(f"{path}: not formatted", file=sys.stderr)
        else:
            write_formatted(formatted)
            rewritten += 1
            print(f"{path}: formatted", file=sys.stderr)
    if failed:
        return 2
    if args.check and unformatted:
        noun, them = ("file is", "it") if unformatted == 1 else ("files are", "them")
        print(f"{unformatted} {noun} not formatted: run benchlang fmt on {them}", file=sys.stderr)
        return 1
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang fmt`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "fmt")
