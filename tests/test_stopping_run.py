"""The executor applies a spec's stopping rule: a configuration whose samples are constant
stops after `min` trials, the decision is stored, and a resume runs nothing more."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from tests.conftest import cli_here

SPEC = """benchlang 1
experiment stopping {
  seed 3
  factor k in [1, 2]
  benchmark echo {
    run "sh -c 'if [ {k} = 1 ]; then echo value=5; else echo value=$(( ($BENCHLANG_TRIAL * 7919) % 101 )); fi'"
    measure v from stdout regex "value=([0-9]+)"
  }
  metric v { better lower }
  stop adaptive { min 10 max 30 }
}
"""


def _benchlang(*args: str) -> subprocess.CompletedProcess:
    """The CLI in this process (``cli_here``); the trials it runs are processes."""
    code, out, err = cli_here(args)
    return subprocess.CompletedProcess(args, code, out, err)


def test_constant_configuration_stops_early_and_resume_runs_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "stop.bench"
    spec.write_text(SPEC)
    store = tmp_path / "stop.sqlite"
    first = _benchlang("run", str(spec), "--store", str(store), "--quiet")
    assert first.returncode == 0, first.stderr
    assert "stopping (adaptive)" in first.stdout
    db = sqlite3.connect(store)
    counts = dict(db.execute("SELECT label, COUNT(*) FROM trials GROUP BY label"))
    assert counts["echo[k=1]"] == 10
    assert 10 <= counts["echo[k=2]"] <= 30
    stops = db.execute(
        "SELECT configuration, after_trials, action, detected_class FROM stops ORDER BY configuration"
    ).fetchall()
    assert stops[0] == (0, 10, "stop", "constant")
    positions = db.execute(
        "SELECT round, GROUP_CONCAT(position) FROM trials GROUP BY round HAVING COUNT(*) = 1"
    ).fetchall()
    assert all(p == "0" for _, p in positions)
    db.close()
    again = _benchlang("run", str(spec), "--store", str(store), "--resume", "--quiet")
    assert again.returncode == 0, again.stderr
    db = sqlite3.connect(store)
    assert dict(db.execute("SELECT label, COUNT(*) FROM trials GROUP BY label")) == counts
