"""``benchlang store migrate``: stores of every earlier schema (1 to 6) are refused by readers
and writers with the command to run, and migrated into the current one with the same trials, values
and other rows, the original kept beside it; a copy that differs is refused and the store left
as it was."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import attrs
import numpy as np
import pytest

from benchlang.app.store_migrate import migrate_store
from benchlang.cli import main
from benchlang.errors import UserError
from benchlang.run.store import SCHEMA_VERSION, StopRecord, Store, StoreBusy, TrialRecord
from benchlang.run.store import migrate as migration
from benchlang.run.store.locks import WriterLock
from tests.docs_runs import Q_SPEC
from tests.store_versions import downgrade


def _record(trial: int, rng: np.random.Generator, phases: bool) -> TrialRecord:
    configuration = trial % 3
    failed = trial % 7 == 3
    measures = {"wall_time": float(rng.lognormal(-3, 1)), "user_time": 0.1 + 2.0**-52 * trial}
    if trial % 5 == 0:
        measures["bytes"] = float(trial) * 1e300
    return TrialRecord(
        trial=trial, series=trial // 12, round=trial // 3, position=trial % 3,
        host=("h1", "h2")[trial % 2], configuration=configuration,
        label=f"b[k={configuration}]", benchmark="b", levels={"k": configuration},
        order_kind=("fixed", "random")[trial // 20 % 2], status="failed" if failed else "ok",
        reason="exit 3" if failed else None, exit_status=3 if failed else 0,
        timed_out=False, started=float(trial), ended=trial + 0.5, attempts=1,
        stdout_tail=b"out %d" % trial, stderr_tail=b"", measures={} if failed else measures,
        series_values={"s": np.arange(3.0) + trial} if trial % 4 == 0 else {},
        phase=("warmup", "measured", "measured", "cooldown")[trial % 4] if phases else "measured",
    )  # fmt: skip


def _fill(path, phases: bool = True) -> None:
    rng = np.random.default_rng(6)
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 1, '{"x": 1}', "e.bench", "spec text")
        store.add_plan("sha256:q", "e", "sha256:s", 2, '{"x": 2}', None, None)
        store.mark_run_started("sha256:p")
        for trial in rng.permutation(45).tolist():
            stop = StopRecord(0, 1, 5, "stop", "kpi", None, "enough") if trial == 44 else None
            store.record_trial("sha256:p", _record(trial, rng, phases), stop)
        store.record_trial("sha256:q", _record(0, rng, phases))
        store.record_host("sha256:p", "h1", {"cpu": "x"})
        store.record_event("sha256:p", "note", "a message", "h1")
        store.record_round("sha256:p", 0, "h1", "fixed", [0, 1, 2], 0.0, 1.0, "ok")


def _tables(path) -> dict:
    with Store(path) as store:
        return {plan: store.trial_table(plan) for plan in ("sha256:p", "sha256:q")}


def _same(left, right) -> None:
    for plan, table in left.items():
        other = right[plan]
        for field in attrs.fields(type(table)):
            a, b = getattr(table, field.name), getattr(other, field.name)
            if field.name == "measures":
                assert a.keys() == b.keys()
                for name in a:
                    assert np.array_equal(a[name], b[name], equal_nan=True), name
            elif isinstance(a, np.ndarray):
                assert np.array_equal(a, b), field.name
            else:
                assert a == b, field.name


def _dump(path, version: int) -> dict[str, list]:
    """Every row of the tables a migration copies, as plain sqlite3 reads them."""
    phase = "'measured'" if version == 1 else "phase"
    queries = {
        "trials": f"SELECT {migration.TRIAL_COLUMNS}, {phase} FROM trials",
        "measures": "SELECT plan_hash, trial, name, value FROM measures",
        "plans": "SELECT plan_hash, experiment, spec_path, spec_text, seed, created, run_started "
        "FROM plans",
        **{t: f"SELECT {c} FROM {t}" for t, c in migration.COPIED.items() if t != "leases"},
    }
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {name: sorted(map(repr, db.execute(q))) for name, q in queries.items()}


@pytest.mark.parametrize("version", [1, 2, 3, 4, 5, 6])
def test_a_store_of_every_earlier_schema_is_refused_then_migrated(tmp_path, version):
    path = tmp_path / "s.sqlite"
    _fill(path, phases=version > 1)
    written = _tables(path)
    downgrade(path, version)
    rows = _dump(path, version)
    original = path.read_bytes()
    os.chmod(path, 0o640)
    for opening in ({}, {"write": True}):
        with pytest.raises(UserError) as refused:
            Store(path, **opening)
        assert f"run `benchlang store migrate {path}`" in refused.value.message
    assert path.read_bytes() == original, "a refused open changed the store"

    assert main(["store", "migrate", str(path)]) == 0
    backup = tmp_path / f"s.sqlite.v{version}.bak"
    assert backup.read_bytes() == original
    assert _dump(path, SCHEMA_VERSION) == rows
    _same(_tables(path), written)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        assert db.execute("SELECT count(*) FROM trial_blocks").fetchone()[0] > 0
    assert os.stat(path).st_mode & 0o777 == 0o640
    left = {p.name for p in tmp_path.iterdir()} - {"s.sqlite-wal", "s.sqlite-shm"}
    assert left == {"s.sqlite", backup.name}, "a migration left files behind"
    with Store(path, write=True) as store:  # the migrated store takes more trials
        store.record_trial("sha256:q", _record(1, np.random.default_rng(1), True))
        assert store.finished_trials("sha256:q") == {0, 1}
    assert main(["store", "migrate", str(path)]) == 0


@pytest.mark.parametrize("version", [5, 6])
def test_reading_an_old_store_is_one_line_exit_2(tmp_path, run_cli, version):
    path = tmp_path / "s.sqlite"
    _fill(path)
    downgrade(path, version)
    for command in (["results", str(path)], ["analyze", str(path)]):
        status, out, err = run_cli(command, cwd=tmp_path)
        assert status == 2 and out == ""
        assert err.strip().splitlines() == [
            f"benchlang: error: {path} has store schema {version} (this benchlang reads schema "
            f"{SCHEMA_VERSION}): run `benchlang store migrate {path}`"
        ]
    status, out, err = run_cli(["store", "migrate", str(path)], cwd=tmp_path)
    assert status == 0, err
    assert f"from schema {version} to {SCHEMA_VERSION}: 46 trials and" in out
    assert "compared equal" in out
    with Store(path) as store:
        assert len(store.trial_table("sha256:p")) == 45


def test_resume_of_a_migrated_run_runs_only_the_missing_trials(tmp_path, run_cli):
    (tmp_path / "q.bench").write_text(Q_SPEC)
    status, _, err = run_cli(["run", "q.bench", "--store", "q.sqlite", "-q"], cwd=tmp_path)
    assert status == 0, err
    path = tmp_path / "q.sqlite"
    with sqlite3.connect(path) as db:  # the run was killed after 7 of its 10 trials
        db.execute("DELETE FROM measures WHERE trial >= 7")
        db.execute("DELETE FROM trials WHERE trial >= 7")
    downgrade(path, 2)
    status, _, err = run_cli(
        ["run", "q.bench", "--store", "q.sqlite", "--resume", "-q"], cwd=tmp_path
    )
    assert status == 2 and "benchlang store migrate" in err
    status, _, err = run_cli(["store", "migrate", "q.sqlite"], cwd=tmp_path)
    assert status == 0, err
    status, _, err = run_cli(
        ["run", "q.bench", "--store", "q.sqlite", "--resume", "-q"], cwd=tmp_path
    )
    assert status == 0, err
    with sqlite3.connect(path) as db:
        trials = [t for (t,) in db.execute("SELECT trial FROM trials ORDER BY trial")]
        values = db.execute("SELECT count(*) FROM measures WHERE name = 'v'").fetchone()[0]
    assert trials == list(range(10)) and values == 10


def test_a_store_being_written_is_not_migrated(tmp_path):
    path = tmp_path / "s.sqlite"
    _fill(path)
    downgrade(path, 4)
    original = path.read_bytes()
    lock = WriterLock(path)
    try:
        with pytest.raises(StoreBusy):
            migrate_store(path)
        assert main(["store", "migrate", str(path)]) == 2
    finally:
        lock.release()
    assert path.read_bytes() == original


def test_a_copy_that_differs_is_refused_and_the_store_left_as_it_was(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    _fill(path)
    downgrade(path, 3)
    original = path.read_bytes()
    copy_rows = migration._copy_rows

    def losing_a_value(db, version):
        copy_rows(db, version)
        db.execute("DELETE FROM measure_rows WHERE rowid = (SELECT max(rowid) FROM measure_rows)")

    monkeypatch.setattr(migration, "_copy_rows", losing_a_value)
    with pytest.raises(UserError, match="differs in measures"):
        migrate_store(path)
    assert path.read_bytes() == original
    assert {p.name for p in tmp_path.iterdir()} - {"s.sqlite-wal", "s.sqlite-shm"} == {"s.sqlite"}


def test_trials_a_killed_writer_left_in_the_log_are_migrated(tmp_path):
    """A schema-5 writer killed after a commit leaves the trial in the write-ahead log only:
    the migration folds the log into the file first, so the copy and the kept original both
    have it."""
    path = tmp_path / "s.sqlite"
    _fill(path)
    downgrade(path, 5)
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, sqlite3, sys\n"
            "db = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "db.execute('PRAGMA journal_mode=WAL'); db.execute('PRAGMA wal_autocheckpoint=0')\n"
            "db.execute('BEGIN')\n"
            'db.execute("INSERT INTO trials SELECT plan_hash, 99, series, round, position, host, '
            "configuration, label, benchmark, levels, order_kind, status, reason, exit_status, "
            "timed_out, started, ended, attempts, stdout_tail, stderr_tail, phase FROM trials "
            "WHERE plan_hash = 'sha256:p' AND trial = 1\")\n"
            "db.execute(\"INSERT INTO measures VALUES ('sha256:p', 99, 'wall_time', 0.125)\")\n"
            "db.execute('COMMIT')\n"
            "os._exit(0)\n",
            str(path),
        ],
        check=True,
    )
    assert killed.returncode == 0
    assert (tmp_path / "s.sqlite-wal").stat().st_size > 0, "the trial is not in the log"
    migrate_store(path)
    with Store(path) as store:
        table = store.trial_table("sha256:p")
        assert 99 in table.trial.tolist()
        assert table.measures["wall_time"][table.trial.tolist().index(99)] == 0.125
    backup = sqlite3.connect(f"file:{tmp_path / 's.sqlite.v5.bak'}?mode=ro&immutable=1", uri=True)
    assert backup.execute("SELECT count(*) FROM trials WHERE trial = 99").fetchone()[0] == 1
    backup.close()
