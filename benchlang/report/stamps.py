"""Each trial's start, end and exit status, read from the store for the trial exports
(``report.trial_columns``); kept by trial number, so a table selected or reordered later
still finds its own."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np


@attrs.frozen
class Stamps:
    """``started`` and ``ended`` in Unix seconds (NaN: never set), ``exit_status`` (NaN:
    none recorded), for the sorted trial numbers ``trial``."""

    trial: np.ndarray
    started: np.ndarray
    ended: np.ndarray
    exit_status: np.ndarray

    def of(self, trials: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(started, ended, exit_status) of ``trials``, NaN for a trial not stored here."""
        where = np.searchsorted(self.trial, trials)
        where = np.minimum(where, max(self.trial.size - 1, 0))
        found = self.trial.size > 0 and (self.trial[where] == trials)
        out = []
        for column in (self.started, self.ended, self.exit_status):
            values = np.full(np.shape(trials), np.nan)
            if self.trial.size:
                values[found] = column[where[found]]
            out.append(values)
        return out[0], out[1], out[2]


def stored_stamps(store: Any, plan_hash: str) -> Stamps:
    """The plan's stamps, one ``group_concat`` per column parsed by numpy (as the store's
    columnar reader does)."""
    row = store.db.execute(
        "SELECT group_concat(trial), group_concat(ifnull(started, 'nan')), "
        "group_concat(ifnull(ended, 'nan')), group_concat(ifnull(exit_status, 'nan')) "
        "FROM (SELECT trial, started, ended, exit_status FROM trials WHERE plan_hash = ? "
        "ORDER BY trial)",
        (plan_hash,),
    ).fetchone()
    trial, started, ended, code = (
        np.fromstring(text, dtype=np.float64, sep=",") if text else np.empty(0) for text in row
    )
    return Stamps(trial.astype(np.int64), started, ended, code)
