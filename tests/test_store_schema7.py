"""Store schema 7 (docs/store.md#schema): a trial's end kept as its duration where that is
exact, read back bit for bit through the ``trials`` view whoever wrote it; a big plan's JSON
compressed and read back whole (a small one stays text for ``json_extract``); an import's
store within 3x the plain table of its rows."""

from __future__ import annotations

import csv
import sqlite3
import struct
import zlib

import attrs
import numpy as np
import pytest

from benchlang.cli import main
from benchlang.run.row_keys import end_columns
from benchlang.run.store import Store, TrialRecord
from benchlang.run.store.records import PLAN_TEXT_MAX, plan_text

TIMES = [
    (1795895637.9793825, 1795895638.4561237),
    (1795895637.9793825, 1795895637.9793825),
    (0.0, 0.5),
    (0.1, 0.7),
    (1.0, 2.0**53 + 2.0),
    (-1e308, 1e308),
    (3.0, None),
    (None, 3.0),
    (None, None),
]
"""Starts and ends: durations whose sum with the start gives the end, two that do not (the
difference rounded; overflowing to infinity), NULLs."""


def _bits(x: float | None) -> object:
    return None if x is None else struct.pack("<d", x)


def _record(trial: int, started: float | None, ended: float | None) -> TrialRecord:
    return TrialRecord(
        trial=trial, series=0, round=trial, position=0, host="local", configuration=0,
        label="b", benchmark="b", levels={}, order_kind="fixed", status="ok", reason=None,
        exit_status=0, timed_out=False, started=started, ended=ended, attempts=1,  # type: ignore[arg-type]
        stdout_tail=b"", stderr_tail=b"", measures={"wall_time": 1.0}, series_values={},
    )  # fmt: skip


def test_an_end_reads_back_bit_for_bit_whoever_wrote_it(tmp_path):
    for started, ended in TIMES:
        stored_end, duration = end_columns(started, ended)
        assert (stored_end is None) != (duration is None) or ended is None
        if duration is not None:
            assert started + duration == ended
    assert end_columns(1.0, 2.0**53 + 2.0) == (2.0**53 + 2.0, None)
    assert end_columns(5.0, 5.0) == (None, 0.0)
    path = tmp_path / "s.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}")
        for trial, (started, ended) in enumerate(TIMES):
            store.record_trial("sha256:p", _record(trial, started, ended))
    with sqlite3.connect(path) as db:  # another program, through the view's trigger
        for trial, (started, ended) in enumerate(TIMES, start=len(TIMES)):
            db.execute(
                "INSERT INTO trials (plan_hash, trial, series, round, position, host, "
                "configuration, label, benchmark, levels, order_kind, status, started, ended) "
                "VALUES ('sha256:p', ?, 0, ?, 0, 'local', 0, 'b', 'b', '{}', 'fixed', 'ok', ?, ?)",
                (trial, trial, started, ended),
            )
    db = sqlite3.connect(path)
    rows = db.execute("SELECT trial, started, ended FROM trials ORDER BY trial").fetchall()
    assert [(_bits(s), _bits(e)) for _, s, e in rows] == [
        (_bits(s), _bits(e)) for s, e in TIMES + TIMES
    ]
    kept = db.execute(
        "SELECT count(*) FROM trial_rows WHERE ended IS NULL AND duration IS NOT NULL"
    ).fetchone()[0]
    assert kept == 2 * 4, "the exact durations are kept as durations"
    db.close()


def test_a_big_plan_is_compressed_and_read_whole(tmp_path):
    big = '{"trials": [' + ", ".join(str(i) for i in range(PLAN_TEXT_MAX // 3)) + "]}"
    assert len(big) > PLAN_TEXT_MAX
    path = tmp_path / "s.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:big", "e", "sha256:s", 1, big)
        store.add_plan("sha256:small", "e", "sha256:s", 2, '{"x": [1, 2]}')
    with sqlite3.connect(path) as db:
        kinds = dict(db.execute("SELECT plan_hash, typeof(plan_json) FROM plans"))
        assert kinds == {"sha256:big": "blob", "sha256:small": "text"}
        assert db.execute(
            "SELECT json_extract(plan_json, '$.x[1]') FROM plans WHERE seed = 2"
        ).fetchone() == (2,)
        size = db.execute("SELECT length(plan_json) FROM plans WHERE seed = 1").fetchone()[0]
        assert size < len(big) / 2
    with Store(path) as store:
        assert {p.plan_hash: p.plan_json for p in store.plans()} == {
            "sha256:big": big,
            "sha256:small": '{"x": [1, 2]}',
        }


def test_a_plan_is_decompressed_only_as_far_as_asked():
    bomb = zlib.compress(b"[" * 50_000_000, 9)
    assert len(plan_text(bomb, 1000)) == 1000
    with pytest.raises(ValueError, match="cannot be read"):
        plan_text(b"not zlib")


def test_an_import_store_is_within_3x_the_plain_table(tmp_path):
    rows = 20_000
    rng = np.random.default_rng(53)
    config = np.argsort(rng.random((rows // 10, 10)), axis=1).ravel()
    values = rng.lognormal(-3, 0.1, rows)
    source = tmp_path / "trials.csv"
    with source.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["test", "order", "run_seq", "position", "value"])
        for i, (c, v) in enumerate(zip(config.tolist(), values.tolist(), strict=True)):
            out.writerow([f"t{c}", "random", i // 10, i % 10, f"{v:.6g}"])
    floor = tmp_path / "floor.sqlite"
    with sqlite3.connect(floor) as db, source.open(newline="") as f:
        db.execute(
            'CREATE TABLE trials (test TEXT, "order" TEXT, run_seq INTEGER, position INTEGER, value REAL)'
        )
        reader = csv.reader(f)
        next(reader)
        db.executemany("INSERT INTO trials VALUES (?,?,?,?,?)", reader)
    db.close()
    store = tmp_path / "s.sqlite"
    assert main(["import", str(source), "--store", str(store)]) == 0
    ratio = store.stat().st_size / floor.stat().st_size
    assert ratio <= 3.0, f"the store is {ratio:.2f}x the plain table"
    with Store(store) as s:
        table = s.trial_table(s.plan().plan_hash)
    assert len(table) == rows and np.allclose(
        np.sort(table.measures["value"]), np.sort(values), rtol=1e-5
    )


def test_output_tails_live_apart_and_read_back_as_written(tmp_path):
    """Tails are in ``trial_outputs`` (a row only when they are not both empty), and the
    ``trials`` view and ``failed_trials`` give them back as written, NULLs and texts too, a
    trial replaced through the view included."""
    path = tmp_path / "s.sqlite"
    written = [(b"out", b""), (b"", b""), (b"", b"err")]
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}")
        for trial, (out, err) in enumerate(written):
            record = attrs.evolve(
                _record(trial, 1.0, 2.0),
                stdout_tail=out,
                stderr_tail=err,
                status="failed",
                reason="exit 1",
            )
            store.record_trial("sha256:p", record)
    through_view = [(None, None), ("", b""), (b"", b""), (b"\x00\xff", None)]
    with sqlite3.connect(path) as db:
        for trial, (out, err) in enumerate(through_view, start=len(written)):
            db.execute(
                "INSERT INTO trials (plan_hash, trial, series, round, position, host, "
                "configuration, label, benchmark, levels, order_kind, status, stdout_tail, "
                "stderr_tail) VALUES ('sha256:p', ?, 0, ?, 0, 'local', 0, 'b', 'b', '{}', "
                "'fixed', 'ok', ?, ?)",
                (trial, trial, out, err),
            )
        db.execute(
            "INSERT OR REPLACE INTO trials SELECT plan_hash, trial, series, round, position, "
            "host, configuration, label, benchmark, levels, order_kind, status, reason, "
            "exit_status, timed_out, started, ended, attempts, X'', X'', phase FROM trials "
            "WHERE trial = 0"
        )
    db.close()
    expected = [(b"", b""), *written[1:], *through_view]
    db = sqlite3.connect(path)
    rows = db.execute("SELECT stdout_tail, stderr_tail FROM trials ORDER BY trial").fetchall()
    assert rows == expected
    kinds = db.execute("SELECT typeof(stdout_tail) FROM trials ORDER BY trial").fetchall()
    assert [k for (k,) in kinds] == ["blob", "blob", "blob", "null", "text", "blob", "blob"]
    outputs = db.execute("SELECT trial FROM trial_outputs ORDER BY trial").fetchall()
    assert outputs == [(2,), (3,), (4,), (6,)], "a row only for tails not both empty"
    db.close()
    with Store(path) as store:
        failed = [(t, out, err) for t, _, _, _, out, err in store.failed_trials("sha256:p")]
    assert failed == [(0, b"", b""), (1, b"", b""), (2, b"", b"err")]
