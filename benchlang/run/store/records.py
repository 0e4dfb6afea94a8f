"""What the store takes and gives: a trial as written, a plan and a stop as stored, a plan's
trials as columns."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from benchlang.run.store.schema import TAIL_BYTES


@attrs.frozen
class TrialRecord:
    """One finished trial as it goes into the store."""

    trial: int
    series: int
    round: int
    position: int
    host: str
    configuration: int
    label: str
    benchmark: str
    levels: Mapping[str, Any]
    order_kind: str
    status: str
    reason: str | None
    exit_status: int | None
    timed_out: bool
    started: float
    ended: float
    attempts: int
    stdout_tail: bytes
    stderr_tail: bytes
    measures: Mapping[str, float]
    series_values: Mapping[str, np.ndarray]
    phase: str = "measured"


PLAN_TEXT_MAX = 1 << 16
"""Bytes of a plan's JSON kept as text (``sqlite3`` queries it with ``json_extract``); a longer
one, which lists a big import's every trial (12 bytes a trial), is stored zlib-compressed
(schema 7: written once, read once a command)."""


def stored_plan(plan_json: str) -> str | bytes:
    """A plan's JSON as ``plans.plan_json`` holds it: the text, or above ``PLAN_TEXT_MAX``
    bytes its UTF-8 compressed by zlib (level 1: 0.03 s for 12 MB, about a tenth of it)."""
    data = plan_json.encode()
    return plan_json if len(data) <= PLAN_TEXT_MAX else zlib.compress(data, 1)


def plan_text(stored: str | bytes, limit: int = 0) -> str:
    """``stored_plan``'s inverse: the plan's JSON text; with ``limit``, at most that many bytes
    of it are decompressed (a stranger's store may hold a zlib bomb). A BLOB that is not zlib
    raises ValueError."""
    if isinstance(stored, str):
        return stored
    try:
        return zlib.decompressobj().decompress(stored, limit).decode()
    except (zlib.error, UnicodeDecodeError) as err:
        raise ValueError(f"the plan's JSON cannot be read: {err}") from None


@attrs.frozen
class StoredPlan:
    plan_hash: str
    experiment: str
    spec_hash: str
    spec_path: str | None
    spec_text: str | None
    seed: int
    plan_json: str
    run_started: float | None


@attrs.frozen
class StopRecord:
    """A stopping rule ended a configuration's trials in a series (docs/stopping.md)."""

    series: int
    configuration: int
    after_trials: int
    action: str
    rule: str
    detected_class: str | None
    reason: str


@attrs.frozen
class TrialTable:
    """Trials of one plan, column-wise, with scalar measures as float arrays (nan = missing)."""

    trial: np.ndarray
    series: np.ndarray
    round: np.ndarray
    position: np.ndarray
    host: np.ndarray
    configuration: np.ndarray
    label: np.ndarray
    benchmark: np.ndarray
    levels: tuple[dict[str, Any], ...]
    order_kind: np.ndarray
    ok: np.ndarray
    reason: np.ndarray
    measures: dict[str, np.ndarray]
    phase: np.ndarray
    session: np.ndarray | None = None
    """Each trial's session (its store's place in a campaign, ``concatenate``); None: one
    session."""

    def __len__(self) -> int:
        return int(self.trial.size)

    @property
    def sessions(self) -> np.ndarray:
        """Each trial's session code (all 0 for a single store)."""
        if self.session is None:
            return np.zeros(self.trial.size, dtype=np.int64)
        return self.session

    @property
    def measured(self) -> np.ndarray:
        """Trials that count in analyses (not an A/B layout's warm-up or cool-down)."""
        return self.phase == "measured"

    def select(self, mask: np.ndarray) -> TrialTable:
        """The trials where ``mask`` is true, every column alike."""
        picked = np.flatnonzero(mask)
        columns = {f.name: getattr(self, f.name) for f in attrs.fields(TrialTable)}
        arrays = {k: v[picked] for k, v in columns.items() if isinstance(v, np.ndarray)}
        return attrs.evolve(
            self,
            levels=tuple(self.levels[i] for i in picked.tolist()),
            measures={k: v[picked] for k, v in self.measures.items()},
            **arrays,
        )


def concatenate(tables: list[TrialTable]) -> TrialTable:
    """The trials of several sessions (stores) of one experiment as one table: ``session`` is
    each table's place in ``tables``; trial ids and series are renumbered so that no two
    sessions share one (a series belongs to one session); a measure some session lacks is nan
    there."""
    names = list(dict.fromkeys(name for t in tables for name in t.measures))
    trial_offset, series_offset = 0, 0
    parts: dict[str, list[np.ndarray]] = {}
    levels: list[dict[str, Any]] = []
    for i, t in enumerate(tables):
        columns = {
            f.name: getattr(t, f.name)
            for f in attrs.fields(TrialTable)
            if isinstance(getattr(t, f.name), np.ndarray)
        }
        columns["trial"] = t.trial + trial_offset
        columns["series"] = t.series + series_offset
        columns["session"] = np.full(len(t), i, dtype=np.int64)
        for name, column in columns.items():
            parts.setdefault(name, []).append(column)
        levels.extend(t.levels)
        trial_offset += int(t.trial.max(initial=-1)) + 1
        series_offset += int(t.series.max(initial=-1)) + 1
    measures = {
        name: np.concatenate([t.measures.get(name, np.full(len(t), np.nan)) for t in tables])
        for name in names
    }
    return TrialTable(
        **{name: np.concatenate(columns) for name, columns in parts.items()},
        levels=tuple(levels),
        measures=measures,
    )


def tail(data: bytes, limit: int = TAIL_BYTES) -> bytes:
    return data[-limit:] if len(data) > limit else data
