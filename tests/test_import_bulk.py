"""A large import writes its trials in bulk (run/bulk_trials.py) and reads CSV columns with
numpy's parser (csvrows.read_columns): the store it makes reads exactly as the same rows
folded one by one would, a resumed import adds nothing, and a file numpy's parser refuses
still gets the careful reader's error with its line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.csvrows import read_columns
from benchlang.errors import UserError
from benchlang.run import bulk_trials
from benchlang.run.store import Store


def write_csv(path: Path, rows: int, seed: int = 3, missing: int | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.lognormal(0, 0.2, rows)
    with path.open("w") as f:
        f.write("test,order,run_seq,position,value\n")
        for i, v in enumerate(values.tolist()):
            cell = "" if i == missing else f"{v:.9g}"
            f.write(f"cfg {i % 3},{'fixed' if i % 2 else 'random'},{i // 3},{i % 3},{cell}\n")
    return values


def table_of(store: Path):
    with Store(store) as s:
        plan = s.plans()[0].plan_hash
        return s.trial_table(plan)


def refolded(store: Path) -> None:
    """Drop every block, list every trial row as pending and reset the measures' watermark,
    as the triggers do when another program changes a row: readers then take the rows
    themselves."""
    db = sqlite3.connect(store)
    with db:
        db.execute("DELETE FROM trial_blocks")
        db.execute("INSERT INTO trial_pending SELECT plan, trial FROM trial_rows")
        db.execute("DELETE FROM measure_blocks")
        db.execute("UPDATE meta SET value = '0' WHERE key = 'measures_folded'")
    db.close()


def test_bulk_import_reads_as_its_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(bulk_trials, "BULK_TRIALS", 1000)  # several transactions and blocks
    csv_path = tmp_path / "t.csv"
    values = write_csv(csv_path, 2500, missing=7)
    store = tmp_path / "s.sqlite"
    assert main(["import", str(csv_path), "--store", str(store)]) == 0
    bulk = table_of(store)
    assert len(bulk) == 2500
    assert np.isnan(bulk.measures["value"][7]) and not bulk.ok[7]
    keep = np.arange(2500) != 7
    order = np.lexsort((bulk.position, bulk.round))
    assert np.allclose(bulk.measures["value"][order][keep], values[keep], rtol=1e-8)
    db = sqlite3.connect(store)
    assert db.execute("SELECT count(*) FROM trial_blocks").fetchone()[0] == 3
    triggers = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='trigger'")}
    assert {"trial_rows_pending", "measure_rows_inserted_below"} <= triggers
    assert db.execute("SELECT count(*) FROM trial_pending").fetchone()[0] == 0
    db.close()
    refolded(store)
    rows = table_of(store)
    for name in ("trial", "series", "round", "position", "configuration", "ok"):
        assert np.array_equal(getattr(bulk, name), getattr(rows, name)), name
    for name in ("label", "order_kind", "host", "phase", "reason"):
        assert list(getattr(bulk, name)) == list(getattr(rows, name)), name
    assert bulk.levels == rows.levels
    assert np.array_equal(bulk.measures["value"], rows.measures["value"], equal_nan=True)


def test_import_again_adds_nothing(tmp_path):
    csv_path = tmp_path / "t.csv"
    write_csv(csv_path, 300)
    store = tmp_path / "s.sqlite"
    assert main(["import", str(csv_path), "--store", str(store)]) == 0
    assert main(["import", str(csv_path), "--store", str(store)]) == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT count(*) FROM trials").fetchone()[0] == 300
    assert db.execute("SELECT count(*) FROM measures").fetchone()[0] == 300
    db.close()


def test_an_import_completes_a_store_missing_some_trials(tmp_path):
    """The trials an import adds to a store that holds some of them (not consecutive: their
    numbers packed as codes, not as a run) read as a whole import's."""
    csv_path = tmp_path / "t.csv"
    write_csv(csv_path, 1200, missing=5)
    whole, part = tmp_path / "whole.sqlite", tmp_path / "part.sqlite"
    for store in (whole, part):
        assert main(["import", str(csv_path), "--store", str(store)]) == 0
    with sqlite3.connect(part) as db:
        db.execute("DELETE FROM measures WHERE trial % 3 = 1 OR trial > 1100")
        db.execute("DELETE FROM trials WHERE trial % 3 = 1 OR trial > 1100")
    db.close()
    assert main(["import", str(csv_path), "--store", str(part)]) == 0
    a, b = table_of(whole), table_of(part)
    for name in ("trial", "series", "round", "position", "configuration", "ok"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("label", "order_kind", "host", "phase", "reason"):
        assert list(getattr(a, name)) == list(getattr(b, name)), name
    assert np.array_equal(a.measures["value"], b.measures["value"], equal_nan=True)


def test_read_columns_fast_and_careful_agree(tmp_path):
    path = tmp_path / "t.csv"
    values = write_csv(path, 50)
    names, fast = read_columns(path, ["value", "run_seq"], ["test"])
    assert names == ("test", "order", "run_seq", "position", "value")
    assert np.allclose(fast["value"], values) and fast["test"][4] == "cfg 1"
    with_gap = tmp_path / "gap.csv"
    write_csv(with_gap, 50, missing=4)
    _, careful = read_columns(with_gap, ["value"], ["test"])
    assert np.isnan(careful["value"][4]) and np.allclose(careful["value"][5:], values[5:])


def test_a_bad_cell_is_named_with_its_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("test,value\na,1.5\nb,fast\n")
    with pytest.raises(UserError, match=r"bad.csv:3: column .value.: not a number: .fast."):
        read_columns(path, ["value"], ["test"])
    with pytest.raises(UserError, match=r"no column 'time'"):
        read_columns(path, ["time"], [])
