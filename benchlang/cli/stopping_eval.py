"""``benchlang stopping-eval``: replay recorded streams through the adaptive stopping rule."""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import attrs
import numpy as np

from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.report.table import render_table
from benchlang.stats.stopping import AdaptiveStop
from benchlang.stats.stopping_eval import MIN_STREAM, evaluate

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
    p.add_argument("files", nargs="+", metavar="FILE", help="JSON list of numbers, or CSV")
    p.add_argument("--column", help="CSV column name (default: the only numeric column)")
    p.add_argument("--ks", type=float, default=0.1, help="KS threshold (default 0.1)")
    p.add_argument("--min", dest="min_n", type=int, default=10, help="minimum samples (default 10)")
    p.add_argument(
        "--max", dest="max_n", type=int, default=400, help="maximum samples (default 400)"
    )
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per stream")
    p.set_defaults(func=run)


def _numbers(values: list[object], path: Path, what: str) -> np.ndarray:
    try:
        x = np.array([float(v) for v in values], dtype=float)
    except (TypeError, ValueError):
        raise UserError(f"{path}: {what} holds a value that is not a number") from None
    if not np.all(np.isfinite(x)):
        raise UserError(f"{path}: {what} holds NaN or infinite values")
    return x


def read_stream(path: Path, column: str | None = None) -> np.ndarray:
    """One stream from a JSON list of numbers or a CSV column (header row required)."""
    try:
        text = path.read_text()
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise UserError(f"{path}: invalid JSON: {err.msg} at line {err.lineno}") from None
        if not isinstance(data, list):
            raise UserError(f"{path}: expected a JSON list of numbers")
        return _numbers(data, path, "the list")
    rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise UserError(
            f"{path}: no data rows", hint="a CSV stream needs a header row and one row per sample"
        )
    names = list(rows[0])
    if column is None:
        numeric = [c for c in names if _all_numbers(r.get(c) for r in rows)]
        if len(numeric) != 1:
            raise UserError(
                f"{path}: {len(numeric)} numeric columns ({', '.join(numeric) or 'none'})",
                hint="choose one with --column NAME",
            )
        column = numeric[0]
    if column not in names:
        raise UserError(f"{path}: no column {column!r}", hint=f"columns: {', '.join(names)}")
    return _numbers([r[column] for r in rows], path, f"column {column!r}")


def _all_numbers(values) -> bool:
    try:
        return all(np.isfinite(float(v)) for v in values)
    except (TypeError, ValueError):
        return False


def run(args: argparse.Namespace) -> int:
    if not 0.0 < args.ks < 1.0:
        raise UserError(f"--ks must lie in (0, 1), got {args.ks}")
    if not 3 <= args.min_n <= args.max_n:
        raise UserError(f"need 3 <= --min <= --max, got {args.min_n} and {args.max_n}")
    rule = AdaptiveStop(ks=args.ks, min_n=args.min_n, max_n=args.max_n)
    results = []
    for name in args.files:
        path = Path(name)
        x = read_stream(path, args.column)
        if x.size < MIN_STREAM:
            raise UserError(
                f"{path}: {x.size} samples; a stream needs at least {MIN_STREAM}",
                hint="the full stream is the ground truth the stopped prefix is compared with",
            )
        results.append((path, evaluate(x, rule, args.ks)))
    if args.json:
        out = []
        for path, e in results:
            out.append(
                {
                    "stream": str(path),
                    **attrs.asdict(e),
                    "passed": e.passed(ks_limit=args.ks + 0.02),
                }
            )
        print(json.dumps(out, indent=2))
        return 0
    rows = [
        (
            path.name,
            e.n,
            e.stop_n,
            e.action,
            e.detected_class,
            e.rule,
            e.ks,
            e.optimal_n,
            e.ratio,
            e.mean_error,
            e.passed(ks_limit=args.ks + 0.02),
        )
        for path, e in results
    ]
    render_table(
        HEADERS,
        rows,
        title=f"adaptive stopping (ks {args.ks:g}, min {args.min_n}, max {args.max_n})",
    )
    for path, e in results:
        print(f"{path.name}: {e.reason}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang stopping-eval`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "stopping-eval")
