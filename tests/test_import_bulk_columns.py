"""The bulk write's columns (run/bulk_trials.py): a column holding one value
is written as an SQL literal that SQLite reads back exactly, text is coded in order of first
appearance, and an import is one transaction (a failure in a later part leaves no trial)."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.run import bulk_trials
from benchlang.run.bulk_trials import first_seen, insert_columns, literal


def test_literals_read_back_exactly():
    rng = np.random.default_rng(53)
    floats = [1795891434.487951, 0.1, 1e-300, 2.5e15, -3.75, *rng.lognormal(0, 5, 200).tolist()]
    values = [*floats, 0, -(2**63), 2**63 - 1, "it's", "", None, b"", b"\x00\xff"]
    db = sqlite3.connect(":memory:")
    assert all(literal(x) is not None for x in (1795891434.487951, 2.5e15, -3.75))
    for value in values:
        text = literal(value)
        if text is None:
            assert isinstance(value, float)  # bound in every row instead
            continue
        back = db.execute(f"SELECT {text}").fetchone()[0]
        assert type(back) is type(value) and back == value, (value, text, back)
    assert literal(True) is None and literal(float("nan")) is None and literal("a\x00b") is None


def test_constant_columns_are_stored_as_bound_ones():
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE t (a, b, c, d, e)")
    n = 5
    columns = [
        np.full(n, 7),
        np.arange(n),
        np.array(["ok"] * n, dtype=object),
        np.full(n, None, dtype=object),
        1795891434.487951,
    ]
    insert_columns(db, "t", n, columns)
    insert_columns(db, "t", 1, [1, 2, "x", None, 0.5])  # every column a literal
    rows = db.execute("SELECT a, b, c, d, e FROM t ORDER BY rowid").fetchall()
    assert rows == [(7, i, "ok", None, 1795891434.487951) for i in range(n)] + [
        (1, 2, "x", None, 0.5)
    ]
    kinds = db.execute("SELECT DISTINCT typeof(a), typeof(e) FROM t").fetchall()
    assert kinds == [("integer", "real")]


def test_packed_columns_read_as_bound_ones(monkeypatch):
    """Above PACKED_ROWS the columns go as one JSON array of packed integers: every row and
    every value's type as ``executemany`` of the same tuples gives them, whether a column is
    a run, integers, a few texts with NULLs, a value bound once, or too many texts to code."""
    rng = np.random.default_rng(7)
    n = 3 * bulk_trials.PACKED_ROWS + 5
    many = np.array([f"t{i}" for i in rng.integers(0, 10 * bulk_trials.CODED_MAX, n)], dtype=object)
    reasons = np.array([None, "exit 3", "it's"], dtype=object)[rng.integers(0, 3, n)]
    cases = {
        "packed": [np.arange(10, 10 + n), rng.integers(-5, 2**20, n), reasons,
                   np.array(["ok", "failed"])[rng.integers(0, 2, n)], 1795891434.4879513, float("nan")],
        "bound": [np.arange(10, 10 + n), rng.integers(-5, 2**20, n), many,
                  np.full(n, "ok"), 0.25, rng.lognormal(0, 1, n)],
    }  # fmt: skip
    packed, taken = bulk_trials._insert_packed, []
    monkeypatch.setattr(
        bulk_trials, "_insert_packed", lambda *args: taken.append(packed(*args)) or taken[-1]
    )
    for name, columns in cases.items():
        db = sqlite3.connect(":memory:")
        db.execute("CREATE TABLE t (a INTEGER, b INTEGER, c TEXT, d TEXT, e REAL, f REAL)")
        db.execute("CREATE TABLE u (a INTEGER, b INTEGER, c TEXT, d TEXT, e REAL, f REAL)")
        insert_columns(db, "t", n, columns)
        rows = zip(
            *[c.tolist() if isinstance(c, np.ndarray) else [c] * n for c in columns], strict=True
        )
        db.executemany("INSERT INTO u VALUES (?,?,?,?,?,?)", rows)
        typed = (
            "SELECT {0}, "
            + ", ".join(f"typeof({c})" for c in "abcdef")
            + " FROM {1} ORDER BY rowid"
        )
        got = db.execute(typed.format("a, b, c, d, e, f", "t")).fetchall()
        assert got == db.execute(typed.format("a, b, c, d, e, f", "u")).fetchall(), name
        assert len(got) == n
    assert taken == [True, False], "the packed form was not the one taken"


def test_first_seen_codes_text_as_numbers():
    for dtype in (object, str):
        text = np.array(["b", "a", "b", "c", "a"], dtype=dtype)
        assert first_seen(text)[0] == ["b", "a", "c"]
        assert first_seen(text)[1].tolist() == [0, 1, 0, 2, 1]
    numbers = np.array([5, 3, 5, 9])
    assert first_seen(numbers)[0] == [5, 3, 9] and first_seen(numbers)[1].tolist() == [0, 1, 0, 2]


def test_an_import_is_all_or_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(bulk_trials, "BULK_TRIALS", 100)
    csv_path = tmp_path / "t.csv"
    rng = np.random.default_rng(4)
    with csv_path.open("w") as f:
        f.write("test,order,run_seq,position,value\n")
        for i, v in enumerate(rng.lognormal(0, 0.2, 350).tolist()):
            f.write(f"c{i % 2},random,{i // 2},{i % 2},{v:.9g}\n")
    write, calls = bulk_trials.write, []

    def failing(db, plan_hash, trials, fold):
        calls.append(len(trials))
        if len(calls) == 3:
            raise sqlite3.IntegrityError("a write that fails in the third part")
        write(db, plan_hash, trials, fold)

    monkeypatch.setattr(bulk_trials, "write", failing)
    store = tmp_path / "s.sqlite"
    with pytest.raises(sqlite3.IntegrityError):
        main(["import", str(csv_path), "--store", str(store)])
    db = sqlite3.connect(store)
    assert db.execute("SELECT count(*) FROM trial_rows").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM measure_rows").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM trial_blocks").fetchone()[0] == 0
    db.close()
    monkeypatch.setattr(bulk_trials, "write", write)
    assert main(["import", str(csv_path), "--store", str(store)]) == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT count(*) FROM trials").fetchone()[0] == 350
    assert db.execute("SELECT count(*) FROM trial_blocks").fetchone()[0] == 4
    db.close()
    assert store.stat().st_mode & 0o777 == 0o600
