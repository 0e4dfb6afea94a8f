"""``benchlang composite``: one weighted effect over a store's benchmarks (Perflab, Bakshy &
Frachtenberg, WWW 2015, §7, footnote 11), with the joint cluster bootstrap's SE beside the
footnote's (docs/statistics.md)."""

from __future__ import annotations

import argparse

from benchlang.app.composite import composite_of_store, parse_weights
from benchlang.cli import add_command
from benchlang.jsonout import document, dumps


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang composite``; the lazy table in benchlang.cli calls this."""
    p.description = "Pool the treatment - control effects of several benchmarks (or requests) into one weighted effect; print its SE by Perflab's footnote 11 (benchmarks independent) and by a joint cluster bootstrap (one weight per host shared by every benchmark), with the correlation between the benchmarks' effects."
    p.add_argument("store", metavar="STORE", help="a store of a run with two or more benchmarks")
    p.add_argument("--metric", help="the metric (default: the spec's first compare's)")
    p.add_argument("--by", help="the two-level factor, control first (default: the compare's)")
    p.add_argument(
        "--over",
        default="benchmark",
        help="what to pool: benchmark (default) or a factor such as request",
    )
    p.add_argument(
        "--weights", metavar="NAME=SHARE,...", help="traffic shares, e.g. a=0.5,b=0.3,c=0.2"
    )
    p.add_argument(
        "--cluster",
        default="host",
        choices=("host", "host_block", "series", "round"),
        help="what one bootstrap weight covers (default host)",
    )
    p.add_argument(
        "--replicates", type=int, default=10_000, help="bootstrap replicates (default: 10000)"
    )
    p.add_argument("--confidence", type=float, default=95.0, help="percent (default 95)")
    p.add_argument("--log", action="store_true", help="compare mean logs (relative effects)")
    p.add_argument("--plan", dest="plan_hash", help="plan hash prefix (default: the latest)")
    p.add_argument(
        "--json", action="store_true", help="one JSON document (strict, versioned: docs/exports.md)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlang.report.composite import render_composite

    report = composite_of_store(
        args.store,
        metric=args.metric,
        by=args.by,
        over=args.over,
        weights=parse_weights(args.weights),
        cluster=args.cluster,
        replicates=args.replicates,
        confidence=args.confidence,
        log=args.log,
        plan_hash=args.plan_hash,
    )
    if args.json:
        print(dumps(document("composite", 1, report.to_dict())))
        return 0
    render_composite(report)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang composite`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "composite")
