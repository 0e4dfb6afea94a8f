"""Stores of every earlier schema, for the migration's tests: a store written by this
benchlang (a real run or ``Store`` calls), rewritten with the DDL of schema N that
``benchlang.run.store.legacy.legacy_schema`` keeps, row for row."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from benchlang.run.store.legacy import legacy_schema
from benchlang.run.store.migrate import COPIED, TRIAL_COLUMNS
from benchlang.run.store.records import plan_text


def downgrade(path: Path, version: int) -> None:
    """Rewrite the (closed) current store at ``path`` as a store of schema ``version``: the
    same plans (their JSON as text), trials (schema 1: no phase), measures and other rows
    (schema 1 and 2: no leases); blocks empty, as a store of that version before its first
    fold (schema 6: trials and measures written through its views)."""
    old = path.with_name(path.name + f".v{version}")
    old.unlink(missing_ok=True)
    db = sqlite3.connect(old, isolation_level=None)
    db.create_function("plan_text", 1, plan_text, deterministic=True)
    try:
        for statement in legacy_schema(version):
            db.execute(statement)
        db.execute("ATTACH DATABASE ? AS new", (f"file:{path}?mode=ro",))
        db.execute("BEGIN")
        db.execute(
            "INSERT INTO main.meta SELECT key, value FROM new.meta "
            "WHERE key NOT IN ('schema_version', 'measures_folded', 'trials_folded')"
        )
        plan_columns = (
            "plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, created, "
            "run_started"
        )
        db.execute(
            f"INSERT INTO main.plans ({plan_columns}) SELECT "
            f"{plan_columns.replace('plan_json', 'plan_text(plan_json)')} FROM new.plans"
        )
        columns = TRIAL_COLUMNS + ("" if version == 1 else ", phase")
        db.execute(f"INSERT INTO main.trials ({columns}) SELECT {columns} FROM new.trials")
        db.execute(
            f"INSERT {'' if version == 6 else 'OR REPLACE '}INTO main.measures "
            "SELECT plan_hash, trial, name, value FROM new.measures"
        )
        for table, columns in COPIED.items():
            if table != "leases" or version >= 3:
                db.execute(
                    f"INSERT INTO main.{table} ({columns}) SELECT {columns} FROM new.{table}"
                )
        db.execute("COMMIT")
        db.execute("DETACH DATABASE new")
    finally:
        db.close()
    os.replace(old, path)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
