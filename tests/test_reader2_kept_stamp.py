"""Second reader: the kept points' stamp (app/history/kept.py) is made of linear sums of the
measure values (``total(value)``, ``total(value * trial)``, ``total(value * name)``), so an
edit of the trials that keeps those sums leaves the kept points "current" and ``history add``
stores the KPIs of values the store no longer holds, where docs/history.md promises that "an
edit by hand" makes it recompute. Two such edits: four values moved by +d, -d, -d, +d at
trials 1, 2, 3, 4 (every sum unchanged), and one value moved by a millionth beside a measure
of large magnitude (a nanosecond timestamp: the float sums round the change away). And a raw
series (``measure x series``) is stamped by its blob's length alone: every series' values
scaled by 1.5 (same number of samples) leave the points current; a value of 0 set to NULL (a
bogus zero left out by hand) changes none of the sums either."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from benchlang.app.history.kept import kept_points
from benchlang.app.history.runs import _store_points
from benchlang.cli import main

DRAW = "awk -v k={k} -v t=$BENCHLANG_TRIAL 'NR == t + 1 {{{{ print k * $1, 1700000000000000000 + t }}}}' {noise}"
SPEC = """benchlang 1
experiment stamp {{
  seed 3
  factor k in [1, 2]
  benchmark draw {{
    run "{run}"
    measure v from stdout regex "^([0-9.]+)"
    measure big from stdout regex " ([0-9.e+]+)$"
  }}
  metric v {{ measure mean unit "s" better lower }}
  kpi v {{ percentile 50 confidence 75% }}
  design {{ runs 9 series 1 order random }}
}}
"""


@pytest.fixture
def ran(tmp_path, capsys) -> Path:
    draws = np.random.default_rng(53).lognormal(0, 0.1, 64)
    noise = tmp_path / "noise.txt"
    noise.write_text("".join(f"{v:.9f}\n" for v in draws))
    spec = tmp_path / "stamp.bench"
    spec.write_text(SPEC.format(run=DRAW.format(k="{k}", noise=noise)))
    store = tmp_path / "stamp.sqlite"
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    assert kept_points(store) is not None
    return store


def _values(store: Path) -> tuple[int, dict[int, float]]:
    with sqlite3.connect(store) as db:
        name = db.execute("SELECT id FROM measure_names WHERE name = 'v'").fetchone()[0]
        rows = db.execute("SELECT trial, value FROM measure_rows WHERE name = ?", (name,))
        return name, dict(rows.fetchall())


def _set(store: Path, name: int, values: dict[int, float]) -> None:
    with sqlite3.connect(store) as db:
        for trial, value in values.items():
            db.execute(
                "UPDATE measure_rows SET value = ? WHERE name = ? AND trial = ?",
                (value, name, trial),
            )


def _compiled(store: Path, monkeypatch) -> str:
    with monkeypatch.context() as m:
        m.setattr("benchlang.app.history.runs.kept_points", lambda path: None)
        return repr(_store_points(store)[1])


def test_an_edit_that_keeps_the_sums_makes_the_kept_points_stale(ran, monkeypatch):
    name, values = _values(ran)
    before = _compiled(ran, monkeypatch)
    moved = {t: values[t] + s * 0.25 for t, s in ((1, 1), (2, -1), (3, -1), (4, 1))}
    _set(ran, name, moved)
    assert _compiled(ran, monkeypatch) != before  # the edit changes what the trials give
    assert kept_points(ran) is None


def test_a_small_edit_beside_large_values_makes_the_kept_points_stale(ran, monkeypatch):
    name, values = _values(ran)
    kept = kept_points(ran)
    medians = {p.value for p in kept.points}
    trial = next(t for t, v in sorted(values.items()) if v in medians)
    before = _compiled(ran, monkeypatch)
    _set(ran, name, {trial: values[trial] + 1e-6})
    assert _compiled(ran, monkeypatch) != before
    assert kept_points(ran) is None


SERIES_SPEC = """benchlang 1
experiment series_stamp {
  seed 3
  factor k in [1, 2]
  benchmark draw {
    run "awk -v k={k} -v t=$BENCHLANG_TRIAL 'BEGIN {{ srand(t); for (i = 0; i < 20; i++) print k * (1 + rand()) }}'"
    measure d series from stdout lines
  }
  metric d { measure percentile 90 unit "s" better lower }
  kpi d { percentile 50 confidence 75% }
  design { runs 9 series 1 order random }
}
"""


def test_a_raw_series_changed_makes_the_kept_points_stale(tmp_path, capsys, monkeypatch):
    spec = tmp_path / "series.bench"
    spec.write_text(SERIES_SPEC)
    store = tmp_path / "series.sqlite"
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    assert kept_points(store) is not None
    before = _compiled(store, monkeypatch)
    with sqlite3.connect(store) as db:
        for trial, name, data in db.execute("SELECT trial, name, data FROM series_values"):
            scaled = (np.frombuffer(data, "<f8") * 1.5).tobytes()
            db.execute(
                "UPDATE series_values SET data = ? WHERE trial = ? AND name = ?",
                (scaled, trial, name),
            )
    assert _compiled(store, monkeypatch) != before
    assert kept_points(store) is None


ZERO_DRAW = (
    "awk -v t=$BENCHLANG_TRIAL 'NR == t + 1 {{{{ print (t == 5 ? 0 : {k} * $1) }}}}' {noise}"
)


def test_a_zero_left_out_makes_the_kept_points_stale(tmp_path, capsys, monkeypatch):
    draws = np.random.default_rng(53).lognormal(0, 0.1, 64)
    noise = tmp_path / "noise.txt"
    noise.write_text("".join(f"{v:.9f}\n" for v in draws))
    spec = tmp_path / "zero.bench"
    spec.write_text(
        SPEC.format(run=ZERO_DRAW.format(k="{k}", noise=noise)).replace(
            'measure big from stdout regex " ([0-9.e+]+)$"', ""
        )
    )
    store = tmp_path / "zero.sqlite"
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    assert kept_points(store) is not None
    before = _compiled(store, monkeypatch)
    with sqlite3.connect(store) as db:
        v = "(SELECT id FROM measure_names WHERE name = 'v')"  # built-in measures hold 0s too
        done = db.execute(f"UPDATE measure_rows SET value = NULL WHERE value = 0 AND name = {v}")
        assert done.rowcount == 1
    assert _compiled(store, monkeypatch) != before  # one value fewer in its configuration
    assert kept_points(store) is None


PROPERTY_SPEC = """benchlang 1
experiment every_edit {
  seed 3
  factor k in [1, 2]
  benchmark draw {
    run "awk -v k={k} -v t=$BENCHLANG_TRIAL 'BEGIN {{ srand(t); printf \\"v %.9f\\", k * (1 + rand()); for (i = 0; i < 6; i++) printf \\" s%.9f\\", rand(); print \\"\\" }}'"
    measure v from stdout regex "v ([0-9.]+)"
    measure d series from stdout regex "s([0-9.]+)"
  }
  metric v { measure mean unit "s" better lower }
  kpi v { percentile 50 confidence 75% }
  design { runs 9 series 2 order random }
}
"""
STAMPED = ("plans", "kinds", "trial_rows", "trial_pending", "trial_blocks", "measure_blocks",
           "measure_rows", "measure_names", "series_values", "rounds", "stops", "hosts")  # fmt: skip


def _changed(value, rng: np.random.Generator):
    """Another value for a cell: a float moved by one ulp or a millionth, an integer by one,
    a text or a blob by one character or byte, or NULL, 0, '' in place of a value."""
    choice = int(rng.integers(4))
    if choice == 0:
        return [None, 0, "", b""][int(rng.integers(4))] if value is not None else 0
    if isinstance(value, float):
        return float(np.nextafter(value, np.inf if choice == 1 else -np.inf)) if choice < 3 \
            else value * (1 + 1e-6) + 1e-300  # fmt: skip
    if isinstance(value, int):
        return value + (1 if choice < 3 else -1)
    if isinstance(value, str):
        return value + "x" if choice < 3 else value[:-1]
    if isinstance(value, bytes):
        if not value:
            return b"\x00"
        at = int(rng.integers(len(value)))
        return value[:at] + bytes([value[at] ^ (1 << int(rng.integers(8)))]) + value[at + 1 :]
    return 0


def test_any_single_edit_of_a_stamped_value_changes_the_stamp(tmp_path, capsys):
    """Seeded random single edits, any stamped table (folded blocks and the rows above them
    both present), any row, any column: a value moved by one ulp, set to NULL, 0 or '', a
    blob's bit flipped, a row deleted or written twice. Each in a transaction rolled back."""
    from benchlang.app.history.kept import stamp
    from benchlang.run.store import Store

    spec = tmp_path / "every.bench"
    spec.write_text(PROPERTY_SPEC)
    store = tmp_path / "every.sqlite"
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    with Store(store, write=True) as s:
        s.fold_blocks()
    with sqlite3.connect(store) as db:  # rows above the blocks too: one trial written again
        plan = db.execute("SELECT id FROM plans").fetchone()[0]
        db.execute("INSERT INTO trial_rows SELECT * FROM trial_rows WHERE trial = 0 AND "
                   "plan = ? ON CONFLICT DO NOTHING", (plan,))  # fmt: skip
        db.execute("INSERT INTO measure_rows SELECT * FROM measure_rows WHERE trial = 3")
    db = sqlite3.connect(store, isolation_level=None)
    plan_hash = db.execute("SELECT plan_hash FROM plans").fetchone()[0]
    for table in ("trial_blocks", "measure_blocks", "series_values", "rounds", "hosts"):
        assert db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] > 0, table
    base = stamp(db, plan_hash)
    assert stamp(db, plan_hash) == base
    rng = np.random.default_rng(29)
    applied = 0
    for _case in range(600):
        table = STAMPED[int(rng.integers(len(STAMPED)))]
        cursor = db.execute(f"SELECT * FROM {table}")
        columns = [c[0] for c in cursor.description]
        rows = cursor.fetchall()
        if not rows:
            continue
        row = rows[int(rng.integers(len(rows)))]
        where = " AND ".join(f'"{c}" IS ?' for c in columns)
        kind = int(rng.integers(10))
        db.execute("BEGIN")
        try:
            if kind == 0:
                db.execute(f"DELETE FROM {table} WHERE {where}", row)
            elif kind == 1:
                db.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
            else:
                at = int(rng.integers(len(columns)))
                db.execute(
                    f'UPDATE {table} SET "{columns[at]}" = ? WHERE {where}',
                    (_changed(row[at], rng), *row),
                )
        except sqlite3.IntegrityError:
            db.execute("ROLLBACK")
            continue
        edited = stamp(db, plan_hash)
        db.execute("ROLLBACK")
        assert edited != base, (table, kind, row)
        applied += 1
    assert stamp(db, plan_hash) == base
    assert applied >= 350
    db.close()
