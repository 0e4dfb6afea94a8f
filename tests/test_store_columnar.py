"""The store's columnar read of a plan's trials gives exactly what a row-at-a-time read gives:
failed trials and their reasons, warm-up phases, several hosts and orders, measures missing
for some trials, values that only survive as exact floats, and trials out of insertion order."""

from __future__ import annotations

import sqlite3

import attrs
import numpy as np

from benchlang.app.store_migrate import migrate_store
from benchlang.run.store import Store, TrialRecord
from tests.store_versions import downgrade


def _record(trial: int, rng: np.random.Generator) -> TrialRecord:
    configuration = int(rng.integers(0, 3))
    failed = trial % 7 == 3
    measures = {"wall_time": float(rng.lognormal(-3, 1))}
    if trial % 2:
        measures["user_time"] = 0.1 + 2.0**-52 * trial
    if trial % 5 == 0:
        measures["bytes"] = float(trial) * 1e300
    return TrialRecord(
        trial=trial, series=trial // 10, round=trial // 4, position=trial % 4,
        host=("h1", "h2, with a comma")[trial % 2], configuration=configuration,
        label=f"b[k={configuration}]", benchmark="b", levels={"k": configuration},
        order_kind=("fixed", "random")[trial // 20 % 2], status="failed" if failed else "ok",
        reason="exit 3, with a comma" if failed else ("retried" if trial == 8 else None),
        exit_status=3 if failed else 0, timed_out=False, started=0.0, ended=1.0, attempts=1,
        stdout_tail=b"", stderr_tail=b"", measures={} if failed else measures,
        series_values={}, phase=("warmup", "measured", "measured", "cooldown")[trial % 4],
    )  # fmt: skip


def test_the_columnar_read_equals_the_row_read(tmp_path):
    rng = np.random.default_rng(3)
    path = tmp_path / "s.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}", None, None)
        store.add_plan("sha256:q", "e", "sha256:s", 2, "{}", None, None)
        for trial in rng.permutation(60).tolist():
            store.record_trial("sha256:p", _record(trial, rng))
        store.record_trial("sha256:q", _record(0, rng))
    with Store(path) as store:
        columnar, by_rows = store.trial_table("sha256:p"), store._trial_table_by_rows("sha256:p")
        assert columnar.trial.tolist() == list(range(60))
        _assert_same(columnar, by_rows, by_rows.measures)
        assert by_rows.measures.keys() == {"wall_time", "user_time", "bytes"}
        reference = _sql_measures(path, columnar.trial)
        assert reference.keys() == {"wall_time", "user_time", "bytes"}
        for name, column in reference.items():
            assert np.array_equal(columnar.measures[name], column, equal_nan=True), name
        assert columnar.reason[8] == "retried" and columnar.reason[3] == "exit 3, with a comma"
        assert columnar.measures["user_time"][57] == 0.1 + 2.0**-52 * 57
        assert store.trial_table("sha256:q").trial.tolist() == [0]
        assert store.trial_table("sha256:none").trial.size == 0


def _assert_same(table, reference, measures: dict[str, np.ndarray]) -> None:
    """Every column of ``table`` equals ``reference``'s, its measures equal ``measures``."""
    for field in attrs.fields(type(table)):
        left, right = getattr(table, field.name), getattr(reference, field.name)
        if field.name == "measures":
            assert left.keys() == measures.keys()
            for name in measures:
                assert np.array_equal(left[name], measures[name], equal_nan=True), name
        elif field.name == "levels":
            assert left == right
        else:
            assert np.array_equal(np.asarray(left), np.asarray(right)), field.name


def _sql_measures(path, trials: np.ndarray) -> dict[str, np.ndarray]:
    """Plan p's measures read with plain sqlite3, one value at a time (the reference)."""
    out: dict[str, np.ndarray] = {}
    position = {t: i for i, t in enumerate(trials.tolist())}
    with sqlite3.connect(path) as db:
        for name, trial, value in db.execute(
            "SELECT name, trial, value FROM measures WHERE plan_hash = 'sha256:p'"
        ):
            column = out.setdefault(name, np.full(trials.size, np.nan))
            column[position[trial]] = np.nan if value is None else value
    return out


def test_only_the_measures_asked_for_are_read(tmp_path):
    rng = np.random.default_rng(4)
    path = tmp_path / "s.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}", None, None)
        for trial in range(40):
            store.record_trial("sha256:p", _record(trial, rng))
    reference = _sql_measures(path, np.arange(40))
    with Store(path) as store:
        for table in (
            store.trial_table("sha256:p", ["user_time", "absent"]),
            store._trial_table_by_rows("sha256:p", ["user_time", "absent"]),
        ):
            assert table.measures.keys() == {"user_time", "absent"}
            assert np.array_equal(
                table.measures["user_time"], reference["user_time"], equal_nan=True
            )
            assert np.isnan(table.measures["absent"]).all()
        assert store.trial_table("sha256:none", ["user_time"]).measures["user_time"].size == 0


def test_blocks_equal_the_rows_through_folds_rewrites_and_upgrades(tmp_path, monkeypatch):
    """The trial and measure blocks give the rows' trial table: folded during a run (a fold
    every few trials), with an unfolded tail, a trial and a value written again after they
    were folded (through the schema-5 views), rows another program deleted (the triggers drop
    the blocks), and a schema-3 store migrated."""
    from benchlang.run import measure_blocks

    monkeypatch.setattr(measure_blocks, "FOLD_ROWS", 7)
    rng = np.random.default_rng(5)
    path = tmp_path / "s.sqlite"

    def same(expect_blocks: bool) -> None:
        with Store(path) as store:
            table, by_rows = store.trial_table("sha256:p"), store._trial_table_by_rows("sha256:p")
            rows = store._measure_rows("sha256:p", table.trial)
            _assert_same(table, by_rows, rows)
            assert rows.keys() == _sql_measures(path, table.trial).keys()
            blocks = store.db.execute(
                "SELECT (SELECT count(*) FROM measure_blocks) + (SELECT count(*) FROM trial_blocks)"
            ).fetchone()[0]
            assert (blocks > 0) == expect_blocks

    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, "{}", None, None)
        for trial in rng.permutation(50).tolist():
            store.record_trial("sha256:p", _record(trial, rng))
        monkeypatch.setattr(measure_blocks, "FOLD_ROWS", 10**9)
        store.record_trial("sha256:p", _record(50, rng))
        assert store._count_unfolded() > 0
    same(expect_blocks=True)
    with sqlite3.connect(path) as db:
        db.execute("INSERT OR REPLACE INTO measures VALUES ('sha256:p', 1, 'wall_time', 0.5)")
        db.execute(
            "INSERT OR REPLACE INTO trials SELECT plan_hash, trial, series, round, position, "
            "host, configuration, label, benchmark, levels, order_kind, 'failed', 'redone', "
            "exit_status, timed_out, started, ended, attempts, stdout_tail, stderr_tail, phase "
            "FROM trials WHERE trial = 4"
        )
    same(expect_blocks=True)
    with Store(path, write=True) as store:
        store.fold_blocks()
        assert store._count_unfolded() == 0
    same(expect_blocks=True)
    with Store(path) as store:
        table = store.trial_table("sha256:p")
        assert table.measures["wall_time"][1] == 0.5
        assert not table.ok[4] and table.reason[4] == "redone"
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM measures WHERE trial = 2")
        db.execute("DELETE FROM trials WHERE trial = 3")
    same(expect_blocks=False)
    with Store(path) as store:
        before = store.trial_table("sha256:p")
    downgrade(path, 3)  # back to schema 3 (no blocks), then migrated: blocks again
    migrate_store(path)
    same(expect_blocks=True)
    with Store(path) as store:
        _assert_same(store.trial_table("sha256:p"), before, before.measures)
    monkeypatch.setattr(measure_blocks, "FOLD_ROWS", 7)
    with Store(path, write=True) as store:
        store.record_trial("sha256:p", _record(60, rng))
    same(expect_blocks=True)
