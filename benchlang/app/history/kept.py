"""A run's history points kept in its store (docs/history.md#kept-points): ``benchlang run``'s
closing analysis computes the KPIs anyway, so it keeps what ``history add`` takes from them,
and ``add`` reads that back instead of compiling the spec and analysing the trials again.

The points are kept in the store's ``meta`` table (``history_points <plan hash>``), with a
*stamp* of the rows they came from: the plan's trial rows (count, largest trial, sums of their
times, kinds, statuses and attempts), its measure rows (count, sums of the values), its raw
series, rounds, stops, host facts, configurations (``kinds``), measure names, spec text, hash
and seed, and the benchlang version that computed them; beside it the store's schema version.
``add`` uses them only when the stamp it computes from the store now is the one kept: a trial
added, written again, changed or deleted (a resumed or extended run, an import into the store,
an edit by hand), another schema or another benchlang makes it recompute them from the trials,
as a store written before points were kept, or by an import, always does. Either way it adds
the same run.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from benchlang import __version__
from benchlang.history.points import Point, points_of, run_facts

if TYPE_CHECKING:
    from benchlang.report.analysis import ConfigurationAnalysis
    from benchlang.report.data import ExperimentData
    from benchlang.run.store import Store

KEY = "history_points "
"""The ``meta`` key of a plan's kept points: this, then the plan hash."""

_STAMP = """
SELECT 'trials', count(*), max(trial), total(started), total(ended), total(duration),
    total(trial * kind), total(trial * (status = 'ok')), total(trial * attempts),
    total(trial * (series + 3 * round + 7 * position))
    FROM trial_rows WHERE plan = (SELECT id FROM plans WHERE plan_hash = ?1)
UNION ALL SELECT 'measures', count(*), total(value), total(value * trial), total(name * trial),
    total(value * name), 0, 0, 0, 0
    FROM measure_rows WHERE plan = (SELECT id FROM plans WHERE plan_hash = ?1)
UNION ALL SELECT 'series', count(*), total(length(data)), total(trial * length(data)), 0, 0,
    0, 0, 0, 0 FROM series_values WHERE plan_hash = ?1
UNION ALL SELECT 'rounds', count(*), total(started), total(ended), total(round * position),
    group_concat(coalesce(reset_status, '')), 0, 0, 0, 0
    FROM (SELECT *, length(permutation) AS position FROM rounds WHERE plan_hash = ?1
        ORDER BY round)
UNION ALL SELECT 'stops', count(*), total(after_trials), 0, 0, 0, 0, 0, 0, 0
    FROM stops WHERE plan_hash = ?1
UNION ALL SELECT 'host', host, facts, 0, 0, 0, 0, 0, 0, 0 FROM hosts WHERE plan_hash = ?1
UNION ALL SELECT 'kind', id, configuration, label, benchmark, levels, host, order_kind, phase, 0
    FROM kinds WHERE plan = (SELECT id FROM plans WHERE plan_hash = ?1)
UNION ALL SELECT 'measure', id, name, 0, 0, 0, 0, 0, 0, 0 FROM measure_names
UNION ALL SELECT 'plan', spec_hash, seed, spec_text, spec_path, 0, 0, 0, 0, 0
    FROM plans WHERE plan_hash = ?1
"""
"""One statement, so one snapshot of a store another process may be writing."""


def stamp(db: sqlite3.Connection, plan_hash: str) -> str:
    """The fingerprint of the rows a plan's points are computed from (SHA-256 of the exact
    ``repr`` of every aggregate: a float's sum is not rounded by SQLite's text form)."""
    rows = sorted(map(repr, db.execute(_STAMP, (plan_hash,)).fetchall()))
    return hashlib.sha256("\n".join([__version__, *rows]).encode()).hexdigest()


def _fields(point: Point) -> list[Any]:
    return [list(x) if isinstance(x, tuple) else x for x in attrs.astuple(point)]


def _point(fields: Sequence[Any]) -> Point:
    values: list[Any] = [tuple(x) if isinstance(x, list) else x for x in fields]
    return Point(*values)


def keep_points(store: Store, data: ExperimentData, kpis: Sequence[ConfigurationAnalysis]) -> bool:
    """At the end of ``benchlang run``: keep the plan's history points (and the run facts)
    in its store, tied to the trials they came from; False, keeping nothing, where ``add``
    would refuse the run (no KPI, a session of builds side by side) or would compile another
    spec than the one analysed (a run continued with a spec that differs in its analysis),
    and where the store cannot be written (the run's result stands; ``add`` recomputes)."""
    from benchlang.app.history.worktrees import session_builds
    from benchlang.run.store import StoreWriteError
    from benchlang.run.store.schema import SCHEMA_VERSION

    experiment, plan = data.experiment, data.plan
    if not kpis or not experiment.kpis or experiment.spec_hash != plan.spec_hash:
        return False
    spec_names = (b.name for b in experiment.benchmarks)
    if session_builds(data.table.benchmark.tolist(), spec_names):
        return False
    record = {
        "schema": str(SCHEMA_VERSION),
        "experiment": experiment.name,
        "facts": run_facts(data),
        "points": [_fields(p) for p in points_of(data, kpis)],
        "stamp": stamp(store.connection, plan.plan_hash),
    }
    try:
        store.set_meta(KEY + plan.plan_hash, json.dumps(record))
    except StoreWriteError:
        return False
    return True


@attrs.frozen
class Kept:
    """A store's kept points of its latest plan, current for its trials."""

    plan_hash: str
    experiment: str
    facts: dict[str, Any]
    points: list[Point]
    ended: float | None
    spec_path: str | None


def run_end(db: sqlite3.Connection, plan_hash: str) -> float | None:
    """The end of a plan's last trial (None without one)."""
    try:
        row = db.execute(
            "SELECT MAX(ended) FROM trials WHERE plan_hash = ?", (plan_hash,)
        ).fetchone()
    except sqlite3.Error:
        return None
    if row and row[0] is not None and math.isfinite(row[0]):
        return float(row[0])
    return None


def kept_points(path: str | Path) -> Kept | None:
    """The store's kept points of its latest plan when they are current, else None (none
    kept, its trials changed since, another schema, or a file SQLite cannot read as it is:
    the compiling path then reads it, and says what is wrong with it). Read with ``sqlite3``
    alone (``mode=ro``), one read transaction."""
    import urllib.parse

    uri = "file:" + urllib.parse.quote(str(Path(path).resolve())) + "?mode=ro"
    try:
        db = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=30.0)
    except sqlite3.Error:
        return None
    try:
        db.execute("BEGIN")
        return _current(db)
    except (sqlite3.Error, ValueError, KeyError, TypeError):
        return None
    finally:
        db.close()


def _current(db: sqlite3.Connection) -> Kept | None:
    plans = db.execute("SELECT plan_hash, spec_path FROM plans ORDER BY created").fetchall()
    if not plans:
        return None
    plan_hash, spec_path = plans[-1]
    row = db.execute("SELECT value FROM meta WHERE key = ?", (KEY + plan_hash,)).fetchone()
    if row is None:
        return None
    record = json.loads(row[0])
    schema = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if schema is None or schema[0] != record["schema"]:
        return None
    if record["stamp"] != stamp(db, plan_hash):
        return None
    return Kept(
        plan_hash,
        record["experiment"],
        record["facts"],
        [_point(p) for p in record["points"]],
        run_end(db, plan_hash),
        spec_path,
    )
