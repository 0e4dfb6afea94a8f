"""Opening stores for analysis: the measured trials of one plan, read and closed at once."""

from __future__ import annotations

from pathlib import Path

from benchlang import model
from benchlang.report.data import ExperimentData, load_data
from benchlang.run.store import Store


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
