"""The SQLite store through real runs: failed trials kept with their reason and output,
timeouts that leave no process behind, and --resume after a SIGKILL mid-run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from benchlang.errors import UserError
from benchlang.run.store import TAIL_BYTES, Store, TrialRecord

SPECS = Path(__file__).parent / "specs"


def gone(pid: int, within: float = 3.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def record(trial: int, **changes) -> TrialRecord:
    fields = dict(
        trial=trial,
        series=0,
        round=trial // 2,
        position=trial % 2,
        host="local",
        configuration=trial % 2,
        label=f"b[k={trial % 2}]",
        benchmark="b",
        levels={"k": trial % 2},
        order_kind="random",
        status="ok",
        reason=None,
        exit_status=0,
        timed_out=False,
        started=1.0,
        ended=2.0,
        attempts=1,
        stdout_tail=b"out",
        stderr_tail=b"",
        measures={"wall_time": 0.5 + trial},
        series_values={},
    )
    fields.update(changes)
    return TrialRecord(**fields)


def test_store_round_trip(tmp_path):
    path = tmp_path / "s.sqlite"
    with Store(path, create=True) as store:
        store.add_plan("sha256:p", "exp", "sha256:s", 7, "{}", "x.bench", "text")
        store.record_trial("sha256:p", record(0, series_values={"lat": np.array([1.0, 2.0, 3.0])}))
        store.record_trial(
            "sha256:p",
            record(
                1,
                status="failed",
                reason="boom",
                exit_status=3,
                stdout_tail=b"x" * (3 * TAIL_BYTES),
                stderr_tail=b"why",
            ),
        )
        with pytest.raises(sqlite3.IntegrityError):
            store.record_trial("sha256:p", record(1))
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with Store(path) as store:
        assert store.finished_trials("sha256:p") == {0, 1}
        table = store.trial_table("sha256:p")
        assert table.ok.tolist() == [True, False]
        assert table.measures["wall_time"].tolist() == [0.5, 1.5]
        assert table.levels == ({"k": 0}, {"k": 1})
        assert store.series_values("sha256:p", "lat")[0].tolist() == [1.0, 2.0, 3.0]
        (failed,) = list(store.failed_trials("sha256:p"))
        assert failed[:4] == (1, "b[k=1]", "boom", 3)
        assert failed[4] == b"x" * TAIL_BYTES and failed[5] == b"why"
        assert store.plan().plan_hash == "sha256:p"
        assert store.plan("p").seed == 7


def test_store_refuses_missing_and_foreign_files(tmp_path):
    with pytest.raises(UserError):
        Store(tmp_path / "absent.sqlite")
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(UserError):
        Store(junk)


def test_store_refuses_a_missing_directory_and_an_oversized_seed(tmp_path):
    with pytest.raises(UserError) as info:
        Store(tmp_path / "no" / "such" / "s.sqlite", create=True)
    assert "no directory" in info.value.message
    with Store(tmp_path / "s.sqlite", create=True) as store:
        with pytest.raises(UserError) as info:
            store.add_plan("sha256:p", "exp", "sha256:s", 2**64, "{}")
        assert "does not fit" in info.value.message
        store.add_plan("sha256:p", "exp", "sha256:s", -(2**63), "{}")
        assert store.plan().seed == -(2**63)


@pytest.fixture(scope="module")
def failures(tmp_path_factory, run_cli):
    workdir = tmp_path_factory.mktemp("failures")
    shutil.copy(SPECS / "failures.bench", workdir)
    store = workdir / "f.sqlite"
    status, out, err = run_cli(["run", "failures.bench", "--store", store, "--quiet"], cwd=workdir)
    return workdir, store, status, out, err


def test_failed_trials_keep_reason_status_and_output(failures):
    _workdir, store, status, out, err = failures
    assert status == 0, err
    assert "Traceback" not in out + err
    db = sqlite3.connect(store)
    rows = db.execute(
        "SELECT trial, benchmark, status, reason, exit_status, timed_out, stdout_tail, stderr_tail FROM trials ORDER BY trial"
    ).fetchall()
    assert len(rows) == 12
    by = {}
    for trial, bench, status_, reason, exit_status, timed_out, out_tail, err_tail in rows:
        by.setdefault(bench, []).append(
            (trial, status_, reason, exit_status, timed_out, out_tail, err_tail)
        )
    assert all(r[1] == "ok" and r[2] is None for r in by["fine"])
    for _, status_, reason, exit_status, timed_out, out_tail, err_tail in by["exits"]:
        assert (status_, exit_status, timed_out) == ("failed", 3, 0)
        assert reason == "the command exited with status 3"
        assert out_tail == b"some-out\n" and err_tail == b"some-err\n"
    for _, status_, reason, _, timed_out, _, _ in by["slow"]:
        assert status_ == "failed" and timed_out == 1 and reason.startswith("the command timed out")
    assert all(
        r[2] == "measure: regex 'value ([a-z]+)' in stdout: expected a number, got 'abc'"
        for r in by["garbled"]
    )
    assert all("no match for regex" in r[2] for r in by["nomatch"])
    assert all("cannot read absent.txt" in r[2] for r in by["nofile"])
    assert "10 trials failed" in out


def test_timed_out_trials_leave_no_process(failures):
    workdir = failures[0]
    pids = [int(p.read_text()) for p in workdir.glob("gc-*.pid")]
    assert len(pids) == 2
    assert all(gone(pid) for pid in pids)


def test_results_counts_failures(failures, run_cli):
    _, store, *_ = failures
    status, out, err = run_cli(["results", store, "--json"])
    assert status == 0, err
    rows = {r["configuration"]["benchmark"]: r for r in json.loads(out)}
    assert rows["fine"]["n"] == 2 and rows["fine"]["failures"] == 0
    assert all(
        rows[b]["n"] == 0 and rows[b]["failures"] == 2
        for b in ("exits", "slow", "garbled", "nomatch", "nofile")
    )


RESUMABLE = """benchlang 1
experiment resumable {
  seed 11
  factor k in [1, 2, 3]
  benchmark b {
    run "echo $BENCHLANG_TRIAL >> ran.txt; sleep 0.02; echo {k}"
    measure v from stdout regex "([0-9]+)"
  }
  design { runs 20 order random }
}
"""


def count_trials(store: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT count(*) FROM trials").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_resume_after_sigkill_runs_every_trial_exactly_once(tmp_path, run_cli):
    (tmp_path / "r.bench").write_text(RESUMABLE)
    store = tmp_path / "r.sqlite"
    total = 60
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "run", "r.bench", "--store", str(store), "--quiet"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while count_trials(store) < 15 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    db = sqlite3.connect(store)
    before = {t for (t,) in db.execute("SELECT trial FROM trials")}
    db.close()
    assert 15 <= len(before) < total, "the kill must land mid-run"
    time.sleep(0.1)  # let an orphaned in-flight trial finish writing

    status, _out, err = run_cli(["run", "r.bench", "--store", store, "--quiet"], cwd=tmp_path)
    assert status == 2 and "--resume" in err

    status, _out, err = run_cli(
        ["run", "r.bench", "--store", store, "--quiet", "--resume"], cwd=tmp_path
    )
    assert status == 0, err
    db = sqlite3.connect(store)
    trials = [t for (t,) in db.execute("SELECT trial FROM trials")]
    assert sorted(trials) == list(range(total))
    assert db.execute("SELECT count(DISTINCT plan_hash) FROM trials").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM trials WHERE status != 'ok'").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM measures WHERE name = 'v'").fetchone()[0] == total

    ran = Counter(int(x) for x in (tmp_path / "ran.txt").read_text().split())
    assert set(ran) == set(range(total))
    twice = {t for t, n in ran.items() if n > 1}
    assert all(n <= 2 for n in ran.values())
    in_flight = min(set(range(total)) - before)
    assert twice <= {in_flight}, (
        f"trials {twice} ran again after resume; only {in_flight} was in flight"
    )
    assert not twice & before

    status, _out, err = run_cli(
        ["run", "r.bench", "--store", store, "--quiet", "--resume"], cwd=tmp_path
    )
    assert status == 0, err
    assert Counter(int(x) for x in (tmp_path / "ran.txt").read_text().split()) == ran
