"""``benchlang plugins``: what is installed in each entry-point group."""

from __future__ import annotations

import argparse

from benchlang.backends.registry import describe_plugins
from benchlang.cli import add_command
from benchlang.jsonout import document, dumps
from benchlang.report.table import render_table


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang plugins``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "List entry points in benchlang.backends, benchlang.statistics and benchlang.factors."
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    p.add_argument(
        "--describe",
        metavar="NAME",
        help="print a statistics method's kind, source and parameters (type, default, range, doc)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.describe:
        return _describe(args.describe, args.json)
    rows = describe_plugins()
    if args.json:
        print(dumps(document("plugins", 1, {"plugins": rows})))
        return 0
    render_table(
        ["group", "name", "provided by", "object", "status", "protocol"],
        [
            (r["group"], r["name"], r["distribution"], r["value"], r["status"], r["protocol"])
            for r in rows
        ],
    )
    return 0


def _describe(name: str, as_json: bool) -> int:
    from benchlang.app.methods import describe_method

    described = describe_method(name)
    if as_json:
        print(dumps(document("plugins.describe", 1, {"method": described})))
        return 0
    print(f"{described['name']} ({described['kind']}): {described['summary']}")
    print(f"provided by: {described['package']} {described['version']}")
    print(f"source: {described['source']}")
    print(f"minimal sample: {described['min_samples']} trials per level")
    params = described["parameters"]
    if not params:
        print("parameters: none")
        return 0
    render_table(
        ["parameter", "type", "default", "range", "doc"],
        [
            (
                p["name"] + (" (required)" if p["required"] else ""),
                p["type"],
                "-" if p["default"] is None else p["default"],
                p["range"],
                p["doc"],
            )
            for p in params
        ],
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang plugins`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "plugins")
