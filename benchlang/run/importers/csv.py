"""Per-trial CSV, one row per trial (OrderSage's files by default: test, order, run_seq,
position, value); columns mapped by option."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from benchlang.csvrows import read_columns, read_header
from benchlang.run.importers.base import ImportedMetric, ImportedTrials, ImportFileError
from benchlang.run.importers.csv_columns import DEFAULT_COLUMNS


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
        numeric = [columns[r] for r in ("value", "round", "position", "series") if columns[r]]
        text = [columns[r] for r in ("configuration", "order") if columns[r]]
        header = read_header(path)
        for role, name in columns.items():
            if name is not None and name not in header:
                raise ImportFileError(
                    f"{path} has no column {name!r} (for the {role})",
                    f"columns: {', '.join(header)}; map them with --{role}-column",
                )
        _, cells = read_columns(path, numeric, text)
        n = next(iter(cells.values())).size

        def whole(role: str) -> np.ndarray:
            name = columns[role]
            if name is None:
                return np.zeros(n, dtype=np.int64)
            v = cells[name]
            with np.errstate(invalid="ignore"):
                fine = np.isfinite(v) & (v == np.round(v)) & (np.abs(v) < 2.0**62)
            if not np.all(fine):
                bad = v[~fine][0]
                raise ImportFileError(
                    f"{path}: column {name!r} ({role}): not a whole number: {bad}"
                )
            return v.astype(np.int64)

        values = cells[columns["value"]] if columns["value"] else np.full(n, np.nan)
        refused = np.isinf(values) | (values < 0)
        if refused.any():
            row = int(np.flatnonzero(refused)[0])
            raise ImportFileError(
                f"{path}: column {columns['value']!r} (value), data row {row + 1}: "
                f"{values[row]:g} is {'negative' if values[row] < 0 else 'not finite'}: refused",
                "a measured time or size is a finite number, never negative "
                "(an empty cell or nan marks a trial without a value)",
            )

        def labels(role: str, default: str) -> np.ndarray:
            name = columns[role]
            return cells[name] if name else np.full(n, default)

        return ImportedTrials(
            tool="csv",
            source=path.name,
            labels=labels("configuration", "all"),
            measures={metric: values},
            metrics=(ImportedMetric(metric, None, str(options.get("better") or "lower")),),
            rounds=whole("round"),
            positions=whole("position"),
            series=whole("series"),
            orders=labels("order", "random"),
            exit_statuses=np.zeros(n, dtype=np.int64),
        )
