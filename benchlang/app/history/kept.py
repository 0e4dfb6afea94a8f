"""A run's history points kept in its store (docs/history.md#kept-points): ``benchlang run``'s
closing analysis computes the KPIs anyway, so it keeps what ``history add`` takes from them,
and ``add`` reads that back instead of compiling the spec and analysing the trials again.

The points are kept in the store's ``meta`` table (``history_points <plan hash>``), with a
*stamp* of the rows they came from: SHA-256 of the exact value of every column of every row an
analysis of the plan reads (its trial rows, the measures as a reader reads them, its raw series,
rounds, stops, host facts, configurations (``kinds``), measure names, its ``plans`` row with the
spec), and of the benchlang version that computed them; beside it the store's schema version.
``add`` uses them only when the stamp it computes from the store now is the one kept: any value
added, written again, changed or deleted (a resumed or extended run, an import into the store,
an edit by hand, a writer's fold of rows into blocks), another schema or another benchlang makes
it recompute them from the trials, as a store written before points were kept, or by an
import, always does; so does other code than the one that computed them (another statistics
plugin, numpy, scipy, a benchlang source changed: the record of ``kept_code``); and so does a plan of more than ``MAX_TRIALS`` trials, where the stamp
costs more than the analysis it saves. Either way it adds the same run.
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
from benchlang.app.history import kept_code
from benchlang.history.points import Point, points_of, run_facts

if TYPE_CHECKING:
    from benchlang.report.analysis import ConfigurationAnalysis
    from benchlang.report.data import ExperimentData
    from benchlang.run.store import Store

KEY = "history_points "
"""The ``meta`` key of a plan's kept points: this, then the plan hash."""

MAX_TRIALS = 40_000
"""Trial rows of a plan above which ``run`` keeps no points and ``add`` compiles: the stamp reads
every row (about 3 µs a trial), and a ``history add`` of kept points took as long as one that
compiles at 50,000 trials, 0.43 s against 0.32 s at 100,000 (benchmarks/bench_kept_stamp.py,
docs/history.md#kept-points)."""

_PLAN = "(SELECT id FROM plans WHERE plan_hash = ?1)"
_PARTS: tuple[tuple[str, str], ...] = (
    ("plan", "SELECT * FROM plans WHERE plan_hash = ?1"),
    ("kinds", f"SELECT * FROM kinds WHERE plan = {_PLAN} ORDER BY id"),
    ("trials", f"SELECT * FROM trial_rows WHERE plan = {_PLAN} ORDER BY trial"),
    ("pending", f"SELECT trial FROM trial_pending WHERE plan = {_PLAN} ORDER BY trial"),
    ("trial blocks", "SELECT * FROM trial_blocks WHERE plan_hash = ?1 ORDER BY block"),
    ("meta", "SELECT * FROM meta WHERE key IN ('measures_folded', 'schema_version') ORDER BY key"),
    (
        "measure blocks",
        "SELECT * FROM measure_blocks WHERE plan_hash = ?1 ORDER BY first_row, name",
    ),
    (
        "measures",
        "SELECT rowid, * FROM measure_rows WHERE rowid > coalesce((SELECT CAST(value AS "
        f"INTEGER) FROM meta WHERE key = 'measures_folded'), 0) AND +plan = {_PLAN} "
        "ORDER BY rowid",
    ),
    ("measure names", "SELECT * FROM measure_names ORDER BY id"),
    ("series", "SELECT * FROM series_values WHERE plan_hash = ?1 ORDER BY trial, name"),
    ("rounds", "SELECT * FROM rounds WHERE plan_hash = ?1 ORDER BY round"),
    ("stops", "SELECT * FROM stops WHERE plan_hash = ?1 ORDER BY series, configuration"),
    ("hosts", "SELECT * FROM hosts WHERE plan_hash = ?1 ORDER BY host"),
)
"""What the stamp reads: every row of the plan an analysis of it can read, every column, in
key order; of the measures, what a reader reads (``run.measure_blocks``): the blocks, the
watermark and the rows above it (a row below it changed or deleted drops the blocks and the
watermark)."""

_BLOBS = frozenset({"plan", "trial blocks", "measure blocks", "series"})
"""The parts with BLOB columns: each blob hashed as its bytes (its length first)."""

_CHUNK = 4096


def stamp(db: sqlite3.Connection, plan_hash: str) -> str:
    """The fingerprint of every value a plan's points are computed from: SHA-256 over each
    row's exact form (Python's ``repr`` of the values SQLite returns: a double's shortest
    round-trip digits, None apart from 0 and ``''``, an integer apart from a float; a blob's
    own bytes), the parts in a fixed order, rows in key order, read ``_CHUNK`` rows at a time
    (a store of a million trials is never one string), in one read transaction (one
    snapshot). Exact: any change of any value changes it (tests/test_reader2_kept_stamp.py).
    Not SQL's text of a value: SQLite 3.40's ``printf('%!.17g')`` and ``quote()`` give digits
    that do not read back as the same double for some doubles (docs/history.md#kept-points)."""
    digest = hashlib.sha256(__version__.encode())
    own = not db.in_transaction
    if own:
        db.execute("BEGIN")
    try:
        for name, sql in _PARTS:
            digest.update(b"\x00" + name.encode() + b"\x00")
            rows = db.execute(sql, (plan_hash,) if "?1" in sql else ())
            while chunk := rows.fetchmany(_CHUNK):
                if name in _BLOBS:
                    _blobs(digest, chunk)
                else:
                    digest.update(repr(chunk).encode())
    finally:
        if own:
            db.execute("COMMIT")
    return digest.hexdigest()


def _blobs(digest: Any, rows: Sequence[Sequence[Any]]) -> None:
    for row in rows:
        digest.update(b"\x1e")
        for value in row:
            if isinstance(value, bytes):
                digest.update(b"\x1fb%d:" % len(value))
                digest.update(value)
            else:
                digest.update(b"\x1f" + repr(value).encode())


def _trials(db: sqlite3.Connection, plan_hash: str) -> int:
    return int(db.execute(f"SELECT count(*) FROM trial_rows WHERE plan = {_PLAN}", (plan_hash,))
               .fetchone()[0])  # fmt: skip


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
    if _trials(store.connection, plan.plan_hash) > MAX_TRIALS:
        return False
    spec_names = (b.name for b in experiment.benchmarks)
    if session_builds(data.table.benchmark.tolist(), spec_names):
        return False
    if _plugin_computed(experiment):
        return False
    computed_by = kept_code.record(_run_start(store.connection, plan.plan_hash))
    if computed_by is None:
        return False
    record = {
        "schema": str(SCHEMA_VERSION),
        **computed_by,
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


def _plugin_computed(experiment: Any) -> bool:
    """Whether a KPI of the experiment is computed by a statistics plugin: its code may live
    in packages and libraries the code record cannot see (a method's implementation in
    another package, the plugin's own dependencies), so such points are not kept and ``add``
    computes them with the plugin installed then."""
    from benchlang.stats.registry import statistics_methods

    catalogue = statistics_methods()
    for kpi in experiment.kpis:
        if kpi.method not in catalogue or catalogue.distribution(kpi.method)[0] != "benchlang":
            return True
    return False


def run_end(db: sqlite3.Connection, plan_hash: str) -> float | None:
    """The end of a plan's last trial (None without one)."""
    return _trial_bound(db, "MAX(ended)", plan_hash)


def _run_start(db: sqlite3.Connection, plan_hash: str) -> float | None:
    return _trial_bound(db, "MIN(started)", plan_hash)


def _trial_bound(db: sqlite3.Connection, aggregate: str, plan_hash: str) -> float | None:
    """``aggregate`` over the plan's trials, a finite number or None."""
    try:
        row = db.execute(
            f"SELECT {aggregate} FROM trials WHERE plan_hash = ?", (plan_hash,)
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
    if _trials(db, plan_hash) > MAX_TRIALS:
        return None
    if not kept_code.current(record):
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
