"""``benchlang stopping-eval``: replay recorded streams through the adaptive stopping rule."""

from __future__ import annotations

import argparse
from typing import Any

import attrs

from benchlang.app.streams import evaluate_streams, evaluate_synthetic
from benchlang.app.streams import read_stream as read_stream  # re-exported for tests
from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.jsonout import document, dumps
from benchlang.report.table import render_table

HEADERS = (
    "stream",
    "n",
    "stop",
    "action",
    "class",
    "rule",
    "KS",
    "optimal",
    "stop/opt",
    "mean err",
    "pass",
)


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang stopping-eval``; the lazy table in benchlang.cli calls this."""
    p.description = "Replay each stream sample by sample through the adaptive stopping rule (Mittal et al., PMBS '23, §2.1) and report where it stopped, the Kolmogorov-Smirnov distance of the stopped prefix to the whole stream and the optimal stopping point."
    p.add_argument("files", nargs="*", metavar="FILE", help="JSON list of numbers, or CSV")
    p.add_argument(
        "--baseline",
        nargs=2,
        metavar=("A", "B"),
        help="instead: the KS distance between two long runs of one benchmark (files or stores), "
        "the floor of what the rule can promise (Mittal et al. §2)",
    )
    p.add_argument(
        "--synthetic",
        metavar="NAMES",
        help="instead of files: synthetic streams of known shape, 'all' or names separated by "
        "commas (normal, lognormal, multimodal, cauchy, autocorrelated_sine, uniform, "
        "log_uniform, near_constant, exponential, drifting), each judged by its own criterion",
    )
    p.add_argument(
        "--length",
        type=int,
        default=1000,
        help="with --synthetic: samples per stream (default 1000, at least 1000)",
    )
    p.add_argument(
        "--seed", type=int, default=5, help="with --synthetic: the generators' seed (default 5)"
    )
    p.add_argument("--configuration", help="with --baseline on a store: the configuration label")
    p.add_argument("--column", help="CSV column name (default: the only numeric column)")
    p.add_argument("--ks", type=float, default=0.1, help="KS threshold (default 0.1)")
    p.add_argument("--min", dest="min_n", type=int, default=10, help="minimum samples (default 10)")
    p.add_argument(
        "--max", dest="max_n", type=int, default=400, help="maximum samples (default 400)"
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list, one object per stream, with its prefix KS curve (ks_curve)",
    )
    p.set_defaults(func=run)


def baseline(args: argparse.Namespace) -> int:
    """``--baseline A B``: the background floor (stats.ks_baseline; docs/stopping.md)."""
    from benchlang.app.baseline import background_baseline

    a, b = args.baseline
    found = background_baseline(
        a, b, column=args.column, configuration=args.configuration, ks=args.ks
    )
    if args.json:
        print(dumps(document("stopping-eval-baseline", 1, {"a": a, "b": b, **found.to_dict()})))
        return 0
    print(
        f"background: KS distance {found.distance:.4g} between {a} ({found.n_a} values) and "
        f"{b} ({found.n_b} values); p {found.p_value:.3g}"
    )
    crit = f"critical distance {found.critical:.3g} at {100 * found.alpha:g}%, asymptotic"
    if found.descriptive_only:
        print(f"descriptive only: {found.descriptive_only} ({crit}, not applicable)")
    elif found.differ:
        print(f"the two runs differ beyond sampling ({crit}): the background moved between them")
    else:
        print(f"within what sampling alone gives ({crit})")
    if found.attainable:
        print(
            f"ks {found.threshold:g} lies above this floor: the threshold can hold against another run too"
        )
    elif found.attainable is None and found.descriptive_only:
        print(
            f"ks {found.threshold:g} lies below this distance; with runs that are not i.i.d. no "
            "test says whether sampling or a move made it: undecided"
        )
    elif found.attainable is None:
        print(
            f"ks {found.threshold:g} lies below this distance, which sampling alone explains: the "
            f"floor lies somewhere below {found.critical:.2g}; longer runs would place it"
        )
    else:
        print(
            f"ks {found.threshold:g} lies below this floor: no stopping point can promise it against "
            f"another run; a threshold of at least {found.distance:.2g} means something here"
        )
    return 0


def _streams(args: argparse.Namespace) -> list[tuple[str, str, Any, Any]]:
    """(name, criterion, stream, evaluation) of each recorded or synthetic stream."""
    from benchlang.stats.stopping_eval import SYNTHETIC_CRITERIA

    if args.synthetic is not None:
        if args.files:
            raise UserError("give files or --synthetic, not both")
        found = evaluate_synthetic(
            args.synthetic, args.length, args.seed, args.ks, args.min_n, args.max_n
        )
        return [(name, SYNTHETIC_CRITERIA[name], x, e) for name, x, e in found]
    if not args.files:
        raise UserError(
            "give the streams to replay, --synthetic all, or --baseline A B",
            "benchlang stopping-eval run.csv, benchlang stopping-eval --synthetic all, or "
            "benchlang stopping-eval --baseline run1.csv run2.csv",
        )
    results = evaluate_streams(args.files, args.column, args.ks, args.min_n, args.max_n)
    return [(str(path), "ks", path, e) for path, e in results]


def run(args: argparse.Namespace) -> int:
    if args.baseline:
        return baseline(args)
    found = _streams(args)
    synthetic = args.synthetic is not None
    if args.json:
        from benchlang.stats.stopping_eval import prefix_ks_distances

        out = []
        for name, criterion, x, e in found:
            stream = x if synthetic else read_stream(x, args.column)
            out.append(
                {
                    "stream": name,
                    **attrs.asdict(e),
                    **({"criterion": criterion} if synthetic else {}),
                    "passed": e.passed(criterion, ks_limit=args.ks + 0.02),
                    # ks_curve[k - 1]: KS of the first k samples to the whole stream (Fig. 1)
                    "ks_curve": prefix_ks_distances(stream).tolist(),
                }
            )
        print(dumps(document("stopping-eval", 1, {"streams": out})))
        return 0
    rows = [
        (
            name if synthetic else x.name,
            e.n,
            e.stop_n,
            e.action,
            e.detected_class,
            e.rule,
            e.ks,
            e.optimal_n,
            e.ratio,
            e.mean_error,
            e.passed(criterion, ks_limit=args.ks + 0.02),
        )
        for name, criterion, x, e in found
    ]
    where = f", {args.length} synthetic samples each, seed {args.seed}" if synthetic else ""
    render_table(
        HEADERS,
        rows,
        title=f"adaptive stopping (ks {args.ks:g}, min {args.min_n}, max {args.max_n}{where})",
    )
    for (_n, criterion, _x, e), row in zip(found, rows, strict=True):
        judged = f" (judged by {criterion})" if synthetic else ""
        print(f"{row[0]}: {e.reason}{judged}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang stopping-eval`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "stopping-eval")
