"""How a trial row is keyed and shortened (schemas 6 and 7): a plan's ``plans.id``, a trial's
``kinds`` row (configuration, label, benchmark, levels, host, order, phase) and a measure's
``measure_names`` row, looked up or made inside the writer's transaction; a trial's end as its
duration (docs/store.md#schema)."""

from __future__ import annotations

import sqlite3

KIND_COLUMNS = ("configuration", "label", "benchmark", "levels", "host", "order_kind", "phase")


def plan_id(db: sqlite3.Connection, plan_hash: str) -> int | None:
    """The plan's id; None when the store holds no such plan."""
    row = db.execute("SELECT id FROM plans WHERE plan_hash = ?", (plan_hash,)).fetchone()
    return None if row is None else int(row[0])


def kind_id(db: sqlite3.Connection, plan: int, kind: tuple) -> int:
    """The id of the ``kinds`` row ``kind`` (``KIND_COLUMNS`` in order) of the plan, made when
    missing."""
    where = " AND ".join(f"{c} = ?" for c in KIND_COLUMNS)
    row = db.execute(f"SELECT id FROM kinds WHERE plan = ? AND {where}", (plan, *kind)).fetchone()
    if row is not None:
        return int(row[0])
    return _inserted(
        db.execute(
            f"INSERT INTO kinds (plan, {', '.join(KIND_COLUMNS)}) VALUES (?,?,?,?,?,?,?,?)",
            (plan, *kind),
        )
    )


def name_id(db: sqlite3.Connection, name: str) -> int:
    """The id of the measure ``name``, made when missing."""
    row = db.execute("SELECT id FROM measure_names WHERE name = ?", (name,)).fetchone()
    if row is not None:
        return int(row[0])
    return _inserted(db.execute("INSERT INTO measure_names (name) VALUES (?)", (name,)))


def _inserted(cursor: sqlite3.Cursor) -> int:
    """The rowid of the row an INSERT made (sqlite3 gives None only when it made none)."""
    if cursor.lastrowid is None:
        raise sqlite3.DatabaseError("the INSERT made no row")
    return int(cursor.lastrowid)


class Keys:
    """The ids a writer has looked up, so that a trial costs no lookup of its plan, kind or
    measures; forgotten on a rollback (a rolled-back transaction may have made them)."""

    __slots__ = ("_kinds", "_names", "_plans")

    def __init__(self) -> None:
        self._plans: dict[str, int] = {}
        self._kinds: dict[tuple, int] = {}
        self._names: dict[str, int] = {}

    def forget(self) -> None:
        self._plans.clear()
        self._kinds.clear()
        self._names.clear()

    def plan(self, db: sqlite3.Connection, plan_hash: str) -> int:
        found = self._plans.get(plan_hash)
        if found is None:
            found = plan_id(db, plan_hash)
            if found is None:
                raise sqlite3.IntegrityError(f"no plan {plan_hash} in the store")
            self._plans[plan_hash] = found
        return found

    def kind(self, db: sqlite3.Connection, plan: int, kind: tuple) -> int:
        key = (plan, *kind)
        found = self._kinds.get(key)
        if found is None:
            found = self._kinds[key] = kind_id(db, plan, kind)
        return found

    def name(self, db: sqlite3.Connection, name: str) -> int:
        found = self._names.get(name)
        if found is None:
            found = self._names[name] = name_id(db, name)
        return found


def end_columns(started: float | None, ended: float | None) -> tuple[float | None, float | None]:
    """A trial row's ``ended, duration`` (schema 7): the duration where the start plus it gives
    the end exactly (the end then NULL: an integral duration such as an import's 0.0 takes no
    byte in SQLite), else the end; ``schema.end_columns`` is the same in SQL."""
    if started is not None and ended is not None:
        duration = ended - started
        if started + duration == ended:
            return None, duration
    return ended, None
