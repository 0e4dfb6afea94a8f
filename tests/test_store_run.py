"""The SQLite store through real runs: failed trials kept with their reason and output,
timeouts that leave no process behind, and --resume after a SIGKILL mid-run."""

from __future__ import annotations

import json
import os
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


def gone(pid: int, within: float = 30.0) -> bool:
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
def failures(built_once, cli_in_process):
    """The run of failures.bench, made once for the session (each module gets a copy): the
    store, and the run's status and output."""
    spec = (SPECS / "failures.bench").read_text()

    def build(workdir: Path) -> None:
        (workdir / "failures.bench").write_text(spec)
        done = cli_in_process(
            ["run", "failures.bench", "--store", "f.sqlite", "--quiet"], cwd=workdir
        )
        (workdir / "run.json").write_text(json.dumps(done))

    workdir = built_once(spec, build)
    status, out, err = json.loads((workdir / "run.json").read_text())
    return workdir, workdir / "f.sqlite", status, out, err


def test_failed_trials_keep_reason_status_and_output(failures):
    _workdir, store, status, out, err = failures
    assert status == 1, err  # trials failed: non-zero, as hyperfine (-i accepts failures)
    assert "10 of 12 trials failed" in err and "--ignore-failure" in err
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


def test_results_counts_failures(failures, cli_in_process):
    _, store, *_ = failures
    status, out, err = cli_in_process(["results", store, "--json"])
    assert status == 0, err
    rows = {r["configuration"]["benchmark"]: r for r in json.loads(out)["configurations"]}
    assert rows["fine"]["n"] == 2 and rows["fine"]["failures"] == 0
    assert all(
        rows[b]["n"] == 0 and rows[b]["failures"] == 2
        for b in ("exits", "slow", "garbled", "nomatch", "nofile")
    )


GATE = 10
RESUMABLE = """benchlang 1
experiment resumable {
  seed 11
  factor k in [1, 2, 3]
  benchmark b {
    run "echo $BENCHLANG_TRIAL >> ran.txt; sleep 0.02; while [ $BENCHLANG_TRIAL -ge GATE ] && [ ! -e go ]; do sleep 0.01; done; echo k={k}"
    measure v from stdout regex "k=([0-9]+)"
  }
  design { runs 8 order random }
}
""".replace("GATE", str(GATE))


def trials_in(store: Path) -> set[int]:
    try:
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=5)
        try:
            return {t for (t,) in db.execute("SELECT trial FROM trials")}
        finally:
            db.close()
    except sqlite3.Error:
        return set()


def started(path: Path) -> list[int]:
    return [int(x) for x in path.read_text().split()] if path.exists() else []


@pytest.mark.slow
def test_resume_after_sigkill_runs_every_trial_exactly_once(tmp_path, cli_in_process):
    """Trial GATE blocks until the file 'go' exists, so the SIGKILL lands deterministically
    while it is in flight, with trials 0..GATE-1 committed. Every trial appends its index to
    ran.txt when it starts: after --resume each index is in the store exactly once, and only
    the in-flight trial may have started twice. The killed run is a process of its own (the
    SIGKILL is the point); the runs after it are the CLI in this process."""
    (tmp_path / "r.bench").write_text(RESUMABLE)
    store, ran_file = tmp_path / "r.sqlite", tmp_path / "ran.txt"
    total = 24
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "run", "r.bench", "--store", str(store), "--quiet"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 90
        while GATE not in started(ran_file) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.01)
        assert GATE in started(ran_file), "the run never reached the gated trial"
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
        (tmp_path / "go").touch()  # releases the orphaned in-flight trial
    assert proc.returncode == -signal.SIGKILL
    assert trials_in(store) == set(range(GATE))
    assert started(ran_file) == list(range(GATE + 1))

    status, _out, err = cli_in_process(
        ["run", "r.bench", "--store", store, "--quiet"], cwd=tmp_path
    )
    assert status == 2 and "--resume" in err

    status, _out, err = cli_in_process(
        ["run", "r.bench", "--store", store, "--quiet", "--resume"], cwd=tmp_path
    )
    assert status == 0, err
    db = sqlite3.connect(store)
    trials = [t for (t,) in db.execute("SELECT trial FROM trials")]
    assert sorted(trials) == list(range(total))
    assert db.execute("SELECT count(DISTINCT plan_hash) FROM trials").fetchone()[0] == 1
    assert db.execute("SELECT count(*) FROM trials WHERE status != 'ok'").fetchone()[0] == 0
    rows = db.execute(
        "SELECT t.levels, m.value FROM trials t JOIN measures m USING (plan_hash, trial) WHERE m.name = 'v'"
    ).fetchall()
    assert len(rows) == total
    assert all(json.loads(levels)["k"] == value for levels, value in rows)
    per_configuration = db.execute("SELECT count(*) FROM trials GROUP BY configuration").fetchall()
    assert per_configuration == [(8,), (8,), (8,)]
    db.close()

    ran = Counter(started(ran_file))
    assert set(ran) == set(range(total))
    assert {t for t, n in ran.items() if n > 1} == {GATE}, "only the in-flight trial may run twice"
    assert ran[GATE] == 2

    status, _out, err = cli_in_process(
        ["run", "r.bench", "--store", store, "--quiet", "--resume"], cwd=tmp_path
    )
    assert status == 0, err
    assert Counter(started(ran_file)) == ran, "resuming a finished run must run nothing"
