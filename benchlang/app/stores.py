"""Opening stores for analysis: the measured trials of one plan, read and closed at once."""

from __future__ import annotations

from pathlib import Path

from benchlang import model
from benchlang.report.data import ExperimentData, load_data
from benchlang.run.store import Store

SQLITE_HEADER = b"SQLite format 3\x00"


def is_store(path: str | Path) -> bool:
    """Whether ``path`` is an SQLite file (a store), by its 16-byte header, not its name."""
    try:
        with Path(path).open("rb") as f:
            return f.read(16) == SQLITE_HEADER
    except OSError:
        return False


def load_store(
    store_path: str | Path,
    plan_hash: str | None = None,
    *,
    all_phases: bool = False,
    experiment: model.Experiment | None = None,
    every_measure: bool = True,
) -> ExperimentData:
    """A plan's trials and metric values (the store's latest plan when ``plan_hash`` is None);
    only the measures the metrics read unless ``every_measure`` (exports need them all).

    The store is closed before returning, so a long analysis never holds it open.
    """
    with Store(store_path) as store:
        return load_data(
            store,
            plan_hash,
            all_phases=all_phases,
            experiment=experiment,
            every_measure=every_measure,
        )
