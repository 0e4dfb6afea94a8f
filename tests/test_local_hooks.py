"""Hooks on the local backend through `benchlang run`: setup once, reset before every round,
before/after around every trial (experiment hooks outside benchmark hooks), teardown last;
env and workdir per spec; a failing hook fails its trial, a failing setup stops the host."""

from __future__ import annotations

import sqlite3
import textwrap

import pytest

HOOKS = """
benchlang 1
experiment hooks {
  workdir "."
  setup "echo setup >> log.txt"
  teardown "echo teardown >> log.txt"
  reset "echo reset >> log.txt"
  before "echo before-exp $BENCHLANG_TRIAL >> log.txt"
  after "echo after-exp $BENCHLANG_TRIAL >> log.txt"
  env X = "ex"
  factor k in [1, 2]
  benchmark b {
    setup "echo setup-b {k} >> log.txt"
    env Y = "y{k}"
    before "echo before-b $BENCHLANG_TRIAL >> log.txt; test {k} -eq 1 || test -e allow"
    run "echo run $BENCHLANG_TRIAL $X $Y $(basename $PWD) >> log.txt"
    after "echo after-b $BENCHLANG_TRIAL >> log.txt"
  }
  design { runs 2 order fixed }
}
"""

BROKEN_SETUP = """
benchlang 1
experiment broken {
  workdir "."
  setup "echo cannot prepare >&2; exit 4"
  benchmark b { run "echo run >> log.txt" }
  design { runs 3 }
}
"""


def trial_lines(t: int, k: int, ran: bool) -> list[str]:
    lines = [f"before-exp {t}", f"before-b {t}"]
    if ran:
        lines += [f"run {t} ex y{k} specdir", f"after-b {t}", f"after-exp {t}"]
    return lines


@pytest.fixture(scope="module")
def runs(tmp_path_factory, run_cli_many):
    """Three runs at once, each started from a directory other than its spec's."""
    roots = {}
    for name, text, allow in (
        ("hooks", HOOKS, True),
        ("gated", HOOKS, False),
        ("broken", BROKEN_SETUP, False),
    ):
        root = tmp_path_factory.mktemp(name)
        (root / "specdir").mkdir()
        (root / "specdir" / "s.bench").write_text(textwrap.dedent(text).lstrip())
        if allow:
            (root / "specdir" / "allow").touch()
        roots[name] = root
    calls = [["run", "specdir/s.bench", "--store", "s.sqlite", "--quiet"]] * len(roots)
    results = run_cli_many(calls, cwd=list(roots.values()))
    return {
        name: (root, result) for (name, root), result in zip(roots.items(), results, strict=True)
    }


def test_hook_order_env_and_workdir(runs):
    root, (status, _out, err) = runs["hooks"]
    assert status == 0, err
    log = (root / "specdir" / "log.txt").read_text().splitlines()
    expected = ["setup", "setup-b 1", "setup-b 2"]
    for r in range(2):
        expected.append("reset")
        for position, k in enumerate((1, 2)):
            expected += trial_lines(2 * r + position, k, ran=True)
    expected.append("teardown")
    assert log == expected
    assert not (root / "log.txt").exists(), "workdir '.' is the spec's directory, not the caller's"


def test_a_failing_before_hook_fails_only_its_trial(runs):
    root, (status, _out, err) = runs["gated"]
    assert status == 1 and "2 of 4 trials failed" in err, err
    db = sqlite3.connect(root / "s.sqlite")
    rows = db.execute("SELECT trial, label, status, reason FROM trials ORDER BY trial").fetchall()
    assert [(t, s) for t, _, s, _ in rows] == [(0, "ok"), (1, "failed"), (2, "ok"), (3, "failed")]
    assert all(
        reason == "before hook exited with status 1" for _, _, s, reason in rows if s == "failed"
    )
    log = (root / "specdir" / "log.txt").read_text().splitlines()
    assert "run 1 ex y2 specdir" not in log and "run 0 ex y1 specdir" in log
    assert log[-1] == "teardown"


def test_a_failing_setup_stops_the_host_and_runs_nothing(runs):
    root, (status, _out, err) = runs["broken"]
    assert status == 1
    assert "setup exited with status 4: cannot prepare" in err
    assert "--resume" in err
    assert "Traceback" not in err
    assert not (root / "specdir" / "log.txt").exists()
    db = sqlite3.connect(root / "s.sqlite")
    assert db.execute("SELECT count(*) FROM trials").fetchone()[0] == 0
