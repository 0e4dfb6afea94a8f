"""Per-trial CSV, one row per trial (OrderSage's files by default: test, order, run_seq,
position, value); columns mapped by option."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchlang.csvrows import numbers_of, read_rows
from benchlang.run.importers.base import ImportedMetric, ImportedTrials, ImportFileError

ROLES = ("configuration", "order", "round", "position", "value", "series")
DEFAULT_COLUMNS: dict[str, str | None] = {
    "configuration": "test",
    "order": "order",
    "round": "run_seq",
    "position": "position",
    "value": "value",
    "series": None,
}


class CsvImporter:
    name: ClassVar[str] = "csv"
    description: ClassVar[str] = (
        "per-trial CSV with a header (columns: configuration, order, round, position, value, "
        "series; OrderSage's names by default)"
    )

    @classmethod
    def recognizes(cls, path: Path, head: bytes) -> bool:
        return path.suffix.lower() in (".csv", ".txt")

    @classmethod
    def read(cls, path: Path, options: Mapping[str, Any]) -> ImportedTrials:
        columns = {**DEFAULT_COLUMNS, **dict(options.get("columns") or {})}
        metric = str(options.get("metric") or "value")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", metric):
            raise ImportFileError(f"metric name {metric!r} is not a name")
        rows = read_rows(path)
        header = rows[0].keys()
        for role, column in columns.items():
            if column is not None and column not in header:
                raise ImportFileError(
                    f"{path} has no column {column!r} (for the {role})",
                    f"columns: {', '.join(header)}; map them with --{role}-column",
                )

        def column(role: str, default: str) -> list[str]:
            key = columns.get(role)
            return [r[key] for r in rows] if key else [default] * len(rows)

        try:
            values = numbers_of(column("value", "nan"), f"{path}: column {columns['value']!r}")
            rounds = [int(v) for v in column("round", "0")]
            positions = [int(v) for v in column("position", "0")]
            series = [int(v) for v in column("series", "0")]
        except ValueError as err:
            raise ImportFileError(f"{path}: {err}") from None
        labels = tuple(column("configuration", "all"))
        return ImportedTrials(
            tool="csv",
            source=path.name,
            labels=labels,
            measures={metric: values},
            metrics=(ImportedMetric(metric, None, str(options.get("better") or "lower")),),
            rounds=rounds,
            positions=positions,
            series=series,
            orders=tuple(column("order", "random")),
            exit_statuses=np.zeros(len(rows), dtype=np.int64),
        )
