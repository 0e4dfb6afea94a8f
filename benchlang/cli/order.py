"""``benchlang order``: does trial order change the results? (OrderSage, ATC 2023)"""

from __future__ import annotations

import argparse

from benchlang.app.order_sessions import order_of_stores
from benchlang.cli import add_command
from benchlang.jsonout import document, dumps
from benchlang.report.order import order_report_json, render_order_report


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang order``; the lazy table in benchlang.cli calls this."""
    p.description = "Per configuration, Kruskal-Wallis fixed vs random with Bonferroni, eta squared, delta % and the CI-overlap case (Duplyakin et al., USENIX ATC 2023); plus position and carry-over effects within random-order rounds. Several stores of one experiment are read as sessions, every test stratified by session."
    p.add_argument(
        "stores",
        metavar="STORE",
        nargs="+",
        help="the SQLite store of a run, or several stores of one experiment read as the "
        "sessions of a campaign (each session's level removed before the tests pool them)",
    )
    p.add_argument("--plan", help="plan hash (default: each store's latest)")
    p.add_argument("--metric", help="metric to test (default: the first declared)")
    p.add_argument(
        "--alpha", type=float, default=0.05, help="family-wise significance level (default 0.05)"
    )
    p.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = order_of_stores(args.stores, args.plan, args.metric, args.alpha)
    if args.json:
        print(dumps(document("order", 1, order_report_json(report))))
    else:
        render_order_report(report)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang order`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "order")
