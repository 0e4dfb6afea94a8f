"""Copying a store of an earlier schema (1 to 6) into a new file of the current schema, and
checking that the copy holds the same trials and values (docs/store.md#migrating; ``benchlang store
migrate``). All in SQL over the old file attached read-only: no row goes through Python but
those the blocks fold."""

from __future__ import annotations

import sqlite3
import urllib.parse
from pathlib import Path

import attrs

from benchlang.errors import UserError
from benchlang.run.store.core import Store
from benchlang.run.store.records import plan_text, stored_plan
from benchlang.run.store.schema import SCHEMA_VERSION, end_columns

WATERMARKS = ("schema_version", "measures_folded", "trials_folded")
"""``meta`` keys the new store sets itself; every other key is copied."""

TRIAL_COLUMNS = (
    "plan_hash, trial, series, round, position, host, configuration, label, benchmark, levels, "
    "order_kind, status, reason, exit_status, timed_out, started, ended, attempts, stdout_tail, "
    "stderr_tail"
)

COPIED = {
    "series_values": "plan_hash, trial, name, data",
    "rounds": "plan_hash, round, host, order_kind, permutation, started, ended, reset_status",
    "hosts": "plan_hash, host, facts, recorded",
    "stops": "plan_hash, series, configuration, after_trials, action, rule, detected_class, "
    "reason, at",
    "events": "plan_hash, at, host, kind, message",
    "leases": "id, plan_hash, kind, lease, spec_dir, acquired, released",
}
"""Tables whose rows schemas 6 and 7 keep as they were (per round, host or event, not per
trial)."""

PLAN_COLUMNS = (
    "plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, created, run_started"
)


@attrs.frozen
class Copied:
    """What a migration copied: the old schema, trials and measure values (each compared equal
    in both files), and the plans."""

    version: int
    plans: int
    trials: int
    measures: int


def schema_of(db: sqlite3.Connection, path: Path, schema: str = "main") -> int:
    """The store's schema version, read from ``meta``; a file that is not a store is refused."""
    try:
        row = db.execute(f"SELECT value FROM {schema}.meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.DatabaseError as err:
        raise UserError(f"{path} is not a benchlang store: {err}") from None
    if row is None:
        raise UserError(f"{path} is not a benchlang store: it has no schema version")
    try:
        return int(row[0])
    except ValueError:
        raise UserError(f"{path} is not a benchlang store: schema {row[0]!r}") from None


def _tables(db: sqlite3.Connection, schema: str) -> set[str]:
    return {
        name
        for (name,) in db.execute(
            f"SELECT name FROM {schema}.sqlite_master WHERE type IN ('table', 'view')"
        )
    }


def copy(old: Path, new: Path) -> Copied:
    """Write the store ``old`` (schema 1 to 6, not being written) into a new store of the
    current schema at ``new``, fold its blocks, and compare: every trial row (every column,
    through the ``trials`` view), every measure value and every plan of ``new`` equal
    ``old``'s, as many and no other. Raises UserError when they differ (``new`` is then left
    for the caller to remove)."""
    with Store(new, create=True) as store:
        db = store.connection
        db.create_function("stored_plan", 1, stored_plan, deterministic=True)
        db.create_function("plan_text", 1, plan_text, deterministic=True)
        uri = "file:" + urllib.parse.quote(str(Path(old).resolve())) + "?mode=ro"
        db.execute("ATTACH DATABASE ? AS old", (uri,))
        try:
            version = _version(db, old)
            if not 1 <= version < SCHEMA_VERSION:
                raise UserError(f"{old} has store schema {version}: nothing to migrate")
            with store._transaction():
                _copy_rows(db, version)
            store.fold_blocks()
            db.execute("VACUUM main")  # the pages of the emptied trial_pending list
            copied = _compare(db, old, version)
        finally:
            db.execute("DETACH DATABASE old")
    return copied


def _version(db: sqlite3.Connection, path: Path) -> int:
    return schema_of(db, path, "old")


def _phase(version: int) -> str:
    return "'measured'" if version == 1 else "t.phase"


def _old_measures(version: int) -> str:
    """The old store's measure rows with their plan hash and name, and the order they were
    written in (``seq``: a later row of one trial and measure is the one readers take)."""
    if version >= 6:
        return (
            "(SELECT p.plan_hash AS plan_hash, m.trial AS trial, n.name AS name, "
            "m.value AS value, m.rowid AS seq FROM old.measure_rows m "
            "JOIN old.plans p ON p.id = m.plan JOIN old.measure_names n ON n.id = m.name)"
        )
    return "(SELECT plan_hash, trial, name, value, rowid AS seq FROM old.measures)"


def _copy_rows(db: sqlite3.Connection, version: int) -> None:
    """Every row of the old store (attached as ``old``) into the new one: trials through the
    old ``trials`` table (a view since schema 6), measures in the order they were written."""
    marks = ", ".join(f"'{k}'" for k in WATERMARKS)
    db.execute(
        f"INSERT OR REPLACE INTO meta SELECT key, value FROM old.meta WHERE key NOT IN ({marks})"
    )
    db.execute(
        f"INSERT INTO plans ({PLAN_COLUMNS}) SELECT "
        f"{PLAN_COLUMNS.replace('plan_json', 'stored_plan(plan_json)')} "
        "FROM old.plans ORDER BY created, rowid"
    )
    phase = _phase(version)
    db.execute(
        "INSERT INTO kinds (plan, configuration, label, benchmark, levels, host, order_kind, "
        f"phase) SELECT DISTINCT p.id, t.configuration, t.label, t.benchmark, t.levels, t.host, "
        f"t.order_kind, {phase} FROM old.trials t JOIN plans p ON p.plan_hash = t.plan_hash"
    )
    db.execute(
        "INSERT INTO trial_rows SELECT p.id, t.trial, t.series, t.round, t.position, k.id, "
        "t.status, t.reason, t.exit_status, t.timed_out, t.started, "
        f"{end_columns('t.started', 't.ended')}, t.attempts FROM old.trials t "
        "JOIN plans p ON p.plan_hash = t.plan_hash JOIN kinds k ON k.plan = p.id "
        "AND k.configuration = t.configuration AND k.label = t.label "
        "AND k.benchmark = t.benchmark AND k.levels = t.levels AND k.host = t.host "
        f"AND k.order_kind = t.order_kind AND k.phase = {phase} ORDER BY p.id, t.trial"
    )
    db.execute(
        "INSERT INTO trial_outputs SELECT p.id, t.trial, t.stdout_tail, t.stderr_tail "
        "FROM old.trials t JOIN plans p ON p.plan_hash = t.plan_hash "
        "WHERE NOT (t.stdout_tail IS X'' AND t.stderr_tail IS X'') ORDER BY p.id, t.trial"
    )
    measures = _old_measures(version)
    db.execute(f"INSERT INTO measure_names (name) SELECT DISTINCT name FROM {measures}")
    db.execute(
        "INSERT INTO measure_rows SELECT p.id, m.trial, n.id, m.value "
        f"FROM {measures} m "
        "JOIN plans p ON p.plan_hash = m.plan_hash JOIN measure_names n ON n.name = m.name "
        "ORDER BY m.seq"
    )
    present = _tables(db, "old")
    for table, columns in COPIED.items():
        if table in present:
            db.execute(f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM old.{table}")


def _differ(db: sqlite3.Connection, left: str, right: str) -> int:
    """Rows of ``left`` that ``right`` lacks (SQL ``EXCEPT``: NULLs equal, REALs exact)."""
    return int(db.execute(f"SELECT count(*) FROM ({left} EXCEPT {right})").fetchone()[0])


def _compare(db: sqlite3.Connection, path: Path, version: int) -> Copied:
    """Counts and contents of trials and measures (and of the tables copied as they were)
    equal in both files."""
    phase = "'measured'" if version == 1 else "phase"
    pairs = {
        "trials": (
            f"SELECT {TRIAL_COLUMNS}, {phase} FROM old.trials",
            f"SELECT {TRIAL_COLUMNS}, phase FROM main.trials",
        ),
        "measures": (
            "SELECT plan_hash, trial, name, value FROM old.measures",
            "SELECT plan_hash, trial, name, value FROM main.measures",
        ),
        "plans": (
            f"SELECT {PLAN_COLUMNS} FROM old.plans",
            f"SELECT {PLAN_COLUMNS.replace('plan_json', 'plan_text(plan_json)')} FROM main.plans",
        ),
    }
    present = _tables(db, "old")
    for table, columns in COPIED.items():
        if table in present:
            pairs[table] = (
                f"SELECT {columns} FROM old.{table}",
                f"SELECT {columns} FROM main.{table}",
            )
    counts = {}
    for table, (old, new) in pairs.items():
        n_old, n_new = (
            int(db.execute(f"SELECT count(*) FROM ({q})").fetchone()[0]) for q in (old, new)
        )
        if n_old != n_new or _differ(db, old, new) or _differ(db, new, old):
            raise UserError(
                f"the migrated copy of {path} differs in {table} ({n_old} rows before, "
                f"{n_new} after): the store is left as it was",
                "report this as a bug, with the store if you can share it",
            )
        counts[table] = n_old
    return Copied(version, counts["plans"], counts["trials"], counts["measures"])
