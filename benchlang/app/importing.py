"""Importing per-trial data from another tool's CSV into a store."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from benchlang.run.importer import Imported, import_csv
from benchlang.run.store import Store


def import_file(
    csv_path: str | Path,
    store_path: str | Path,
    columns: Mapping[str, str | None],
    metric: str = "value",
    better: str = "lower",
    name: str | None = None,
) -> Imported:
    """Import a CSV (one row per trial) into a store, creating it if needed."""
    with Store(store_path, create=True) as store:
        return import_csv(csv_path, store, columns, metric, better, name)
