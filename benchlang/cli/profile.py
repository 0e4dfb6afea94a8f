"""``benchlang profile``: seasonal components of network condition data (TriScale §4.6)."""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

import numpy as np

from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.report.record import format_duration
from benchlang.report.table import render_table
from benchlang.stats.profile import profile


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
    from benchlang.lang.syntax import parse_duration

    try:
        seconds = parse_duration(text.strip())
    except ValueError:
        seconds = math.nan
    if not seconds > 0:
        raise UserError(f"--period {text!r} is not a positive duration", "use e.g. 30s, 5m, 2h, 1d")
    return seconds


def _number(cell: str) -> float | None:
    cell = cell.strip()
    if cell == "" or cell.lower() in ("nan", "na", "null"):
        return math.nan
    try:
        return float(cell)
    except ValueError:
        return None


def read_column(path: str, column: str | None) -> tuple[np.ndarray, str]:
    """The chosen numeric column of a CSV file (empty cells are missing samples)."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise UserError(f"cannot read {path}: {err.strerror}") from None
    rows = [r for r in csv.reader(text.splitlines()) if any(c.strip() for c in r)]
    if not rows:
        raise UserError(f"{path} holds no data")
    header = None if all(_number(c) is not None for c in rows[0]) else [c.strip() for c in rows[0]]
    data = rows[1:] if header else rows
    width = max(len(r) for r in rows)
    names = header or [str(i + 1) for i in range(width)]
    if column is not None:
        if column in names:
            index = names.index(column)
        elif column.isdigit() and 1 <= int(column) <= width:
            index = int(column) - 1
        else:
            raise UserError(f"no column {column!r} in {path}", f"columns: {', '.join(names)}")
    else:
        numeric = [
            i for i in range(width) if all(_number(r[i]) is not None for r in data if i < len(r))
        ]
        if len(numeric) != 1:
            raise UserError(
                f"{path} has {len(numeric)} numeric columns", "choose one with --column"
            )
        index = numeric[0]
    values = []
    for line, r in enumerate(data, start=2 if header else 1):
        v = _number(r[index]) if index < len(r) else math.nan
        if v is None:
            raise UserError(f"{path}:{line}: not a number: {r[index]!r}")
        values.append(v)
    return np.array(values, dtype=float), names[index]


def run(args: argparse.Namespace) -> int:
    seconds = _period(args.period)
    if args.max_lag is not None and args.max_lag < 2:
        raise UserError(f"--max-lag must be at least 2, got {args.max_lag}")
    values, name = read_column(args.file, args.column)
    try:
        result = profile(values, seconds, args.max_lag)
    except ValueError as err:
        raise UserError(str(err)) from None
    if args.json:
        print(json.dumps({"file": args.file, "column": name, **result.to_dict()}))
        return 0
    render_profile(args.file, name, seconds, result)
    return 0


def render_profile(path: str, name: str, seconds: float, result) -> None:
    """The profile of one condition-data column: ACF peaks, periods, recommended span."""
    span = result.recommended_span
    print(
        f"{path} [{name}]: {result.n} samples every {format_duration(seconds)}"
        f" ({result.missing} missing), i.i.d.: {'yes' if result.independence.passed else 'no'}"
    )
    rows = [
        [lag, format_duration(lag * seconds), acf, "yes" if lag in result.periods else ""]
        for lag, acf in zip(result.peaks, result.peak_acf, strict=True)
    ]
    if rows:
        render_table(["lag", "time", "acf", "period"], rows, title="Significant ACF peaks")
    else:
        print("No significant autocorrelation peak: no seasonal component found.")
    if span is None:
        print("Recommended series span: any (no seasonal component)")
    else:
        periods = ", ".join(format_duration(p * seconds) for p in result.periods)
        print(f"Seasonal periods: {periods}")
        print(f"Recommended series span: at least {format_duration(span)}")


def profile_spec_item(item: dict) -> None:
    """``analysis { profile NAME from file F period P }`` of a spec."""
    values, name = read_column(item["path"], item.get("column"))
    try:
        result = profile(values, item["period"])
    except ValueError as err:
        raise UserError(f"profile {item['name']}: {err}") from None
    render_profile(item["path"], name, item["period"], result)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang profile`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "profile")
