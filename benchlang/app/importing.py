"""Importing another tool's results (hyperfine, pyperf, per-trial CSV, plugins) into a store."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchlang.app import blas_threads  # before numpy: see its docstring
from benchlang.run.importers.registry import detect_importer, load_importer
from benchlang.run.importers.writer import Imported, experiment_name, write_trials
from benchlang.run.store import Store

blas_threads.started()


def import_file(
    path: str | Path,
    store_path: str | Path,
    options: Mapping[str, Any],
    name: str | None = None,
    tool: str | None = None,
) -> Imported:
    """Read ``path`` with the named importer (else the one that recognizes the file) and
    store its trials as an experiment, creating the store if needed."""
    path = Path(path)
    importer = load_importer(tool) if tool else detect_importer(path)
    table = importer.read(path, options)
    with Store(store_path, create=True) as store:
        return write_trials(table, store, experiment_name(table, name, path.stem))
