"""The one column set of the trial exports: CSV, Parquet and the JSON document's trials
(docs/exports.md, "Trial columns").

Fixed columns first (``trial`` .. ``ended``), then one per factor, per stored measure and per
metric (``metric:NAME``). A campaign's data (several stores read as sessions,
``app.campaign``) starts with ``session`` (1, 2, ... in the order the stores were given) and
``store`` (its path as given), and numbers each session's trials and series as its own store
does, so a session's rows equal its store's own export. A factor or measure whose name is taken by an earlier column is
prefixed (``factor_``, ``measure_``): an import's generated factor ``configuration`` is
``factor_configuration``, never a second ``configuration``. A measure or metric whose unit is
known carries it in its name (``wall_time_s``, ``max_rss_KiB``, ``metric:time_ms``; counts and
unit-less values keep their names); every column's unit is also listed in the JSON document's
``trial_columns`` and the Parquet file's metadata. Types are fixed per column (``int64``,
``float64``, ``string``; nullable), so exports of different stores append.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import attrs
import numpy as np

from benchlang.model import BUILTIN_MEASURES

if TYPE_CHECKING:
    from benchlang.report.data import ExperimentData
    from benchlang.run.store.records import TrialTable

FIXED = (
    "trial", "series", "round", "position", "order", "host", "benchmark", "configuration",
    "configuration_index",
)  # fmt: skip
AFTER_FACTORS = ("phase", "status", "reason", "exit_status", "started", "ended")
SESSION = ("session", "store")
QUIET_UNITS = {"", "count", "1"}


@attrs.frozen
class Column:
    """One export column: its ``name``, ``type`` (int64, float64, string), ``unit`` (None:
    none known), ``field`` (where a JSON trial row holds it: ``measures.time``) and the
    values of every trial (strings as objects, None missing; numbers NaN missing)."""

    name: str
    type: str
    unit: str | None
    field: str
    values: np.ndarray = attrs.field(eq=False, repr=False)

    def describe(self) -> dict[str, str | None]:
        return {"name": self.name, "type": self.type, "unit": self.unit, "field": self.field}


def _suffix(name: str, unit: str | None) -> str:
    if unit is None or unit in QUIET_UNITS:
        return name
    return f"{name}_{re.sub(r'[^A-Za-z0-9]+', '_', unit).strip('_')}"


def _text(values: list) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = [None if v is None else str(v) for v in values]
    return out


def _factor(values: list) -> tuple[str, np.ndarray]:
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        if len(present) == len(values):
            return "int64", np.asarray(values, dtype=np.int64)
        return "float64", np.array([np.nan if v is None else v for v in values], dtype=float)
    if present and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        return "float64", np.array([np.nan if v is None else v for v in values], dtype=float)
    return "string", _text(values)


def measure_unit(data: ExperimentData, name: str) -> str | None:
    """A measure's unit: a built-in's, else the metric of the same name's when that metric's
    values are the measure's (a metric computed otherwise says nothing of the measure)."""
    if name in BUILTIN_MEASURES:
        return BUILTIN_MEASURES[name]
    metric = data.metrics.get(name)
    if metric is None or not metric.metric.unit:
        return None
    mine, theirs = data.table.measures[name], metric.values
    if mine.shape != theirs.shape:
        return None
    both = np.isfinite(mine) & np.isfinite(theirs)
    return metric.metric.unit if both.any() and np.array_equal(mine[both], theirs[both]) else None


def own_numbers(numbers: np.ndarray, sessions: np.ndarray) -> np.ndarray:
    """Each session's trial (or series) numbers as its store holds them: undoes
    ``run.store.records.concatenate``, which shifts a session's numbers by the previous
    sessions' (each one's largest + 1)."""
    count = int(sessions.max(initial=-1)) + 1
    largest = np.full(count, -1, dtype=np.int64)
    np.maximum.at(largest, sessions, numbers.astype(np.int64))
    ends = np.maximum.accumulate(largest) + 1
    offsets = np.concatenate([[0], ends[:-1]])
    return numbers.astype(np.int64) - offsets[sessions]


def session_columns(table: TrialTable, stores: tuple[str, ...]) -> list[Column]:
    """A campaign's ``session`` (1-based, as the JSON document's) and ``store`` (its path as
    given; null where not known) columns."""
    sessions = table.sessions
    named = _text(
        [stores[s] if s < len(stores) else None for s in range(int(sessions.max(initial=-1)) + 1)]
    )
    return [
        Column("session", "int64", None, "session", sessions.astype(np.int64) + 1),
        Column("store", "string", None, "store", named[sessions]),
    ]


def trial_columns(data: ExperimentData) -> list[Column]:
    """The export columns of ``data``'s trials, in order (module docstring)."""
    table = data.table
    n = len(table)
    taken: set[str] = set(FIXED) | set(AFTER_FACTORS)
    campaign = table.session is not None
    if campaign:
        taken |= set(SESSION)
        trials = own_numbers(table.trial, table.sessions)
        series = own_numbers(table.series, table.sessions)
    else:
        trials, series = table.trial, table.series
    shared = {id(levels): levels for levels in table.levels}
    factors = list(dict.fromkeys(k for levels in shared.values() for k in levels))
    if data.stamps is not None:
        started, ended, code = data.stamps.of(table.trial)
    else:
        started = ended = code = np.full(n, np.nan)
    failures = data.failures
    if failures:  # the failure details' exit status where the stamps have none
        for i in np.flatnonzero(np.isin(table.trial, list(failures))).tolist():
            value = failures[int(table.trial[i])].get("exit_status")
            if np.isnan(code[i]) and isinstance(value, int):
                code[i] = value
    columns = session_columns(table, data.stores) if campaign else []
    columns += [
        Column("trial", "int64", None, "trial", trials.astype(np.int64)),
        Column("series", "int64", None, "series", series.astype(np.int64)),
        Column("round", "int64", None, "round", table.round.astype(np.int64)),
        Column("position", "int64", None, "position", table.position.astype(np.int64)),
        Column("order", "string", None, "order", _text(table.order_kind.tolist())),
        Column("host", "string", None, "host", _text(table.host.tolist())),
        Column("benchmark", "string", None, "benchmark", _text(table.benchmark.tolist())),
        Column("configuration", "string", None, "configuration", _text(table.label.tolist())),
        Column(
            "configuration_index",
            "int64",
            None,
            "configuration_index",
            table.configuration.astype(np.int64),
        ),
    ]
    for factor in factors:
        name = factor if factor not in taken else f"factor_{factor}"
        taken.add(name)
        kind, values = _factor([levels.get(factor) for levels in table.levels])
        columns.append(Column(name, kind, None, f"levels.{factor}", values))
    columns += [
        Column("phase", "string", None, "phase", _text(table.phase.tolist())),
        Column(
            "status",
            "string",
            None,
            "status",
            _text(np.where(table.ok, "ok", "failed").tolist()),
        ),
        Column("reason", "string", None, "reason", _text(table.reason.tolist())),
        Column("exit_status", "int64", None, "exit_status", code),
        Column("started", "float64", "Unix time, s", "started", started),
        Column("ended", "float64", "Unix time, s", "ended", ended),
    ]
    for measure in sorted(table.measures):
        unit = measure_unit(data, measure)
        name = _suffix(measure, unit)
        name = name if name not in taken else f"measure_{name}"
        taken.add(name)
        values = np.asarray(table.measures[measure], dtype=float)
        columns.append(Column(name, "float64", unit, f"measures.{measure}", values))
    for metric, mv in data.metrics.items():
        unit = mv.metric.unit or None
        name = f"metric:{_suffix(metric, unit)}"
        columns.append(
            Column(name, "float64", unit, f"metrics.{metric}", np.asarray(mv.values, float))
        )
    return columns


def arrow_table(data: ExperimentData):  # -> pyarrow.Table
    """The columns as an Arrow table with a fixed schema (a string column stays a string
    when every value is null) and the column descriptions in the schema's metadata
    (``benchlang.trial_columns``, JSON)."""
    import json

    import pyarrow as pa

    kinds = {"int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}
    columns = trial_columns(data)
    arrays = []
    for column in columns:
        values = column.values
        if column.type == "string":
            arrays.append(pa.array(values.tolist(), type=pa.string()))
            continue
        if values.dtype.kind == "f":
            array = pa.array(values, type=pa.float64(), mask=~np.isfinite(values))
            arrays.append(array.cast(kinds[column.type]))
        else:
            arrays.append(pa.array(values, type=kinds[column.type]))
    schema = pa.schema(
        [pa.field(c.name, kinds[c.type]) for c in columns],
        metadata={"benchlang.trial_columns": json.dumps([c.describe() for c in columns])},
    )
    return pa.Table.from_arrays(arrays, schema=schema)
