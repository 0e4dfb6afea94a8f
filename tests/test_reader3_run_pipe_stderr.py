"""Third reader: ``benchlang run SPEC 2>&1 | head -1`` (standard output and error one pipe,
its reader gone after the first line) stops the run at its first trial and exits 1, the store
left with 1 of the plan's trials. docs/cli.md "Exit statuses": a closed standard output stops
no run, "a run goes on to its last trial"; cli.output guards file descriptor 1 only, so the
progress line on standard error raises BrokenPipeError through the run (``_dispatch`` maps it
to ``output.closed``: exit 1 for a verdict). Before bcd249b it stopped there too (exit 120)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SPEC = """benchlang 1
experiment piped {
  seed 1
  factor k in [1, 2]
  benchmark draw {
    run "sleep 0.02; echo {k}"
    measure v from stdout regex "([0-9]+)"
  }
  metric v { measure mean unit "s" better lower }
  design { runs 5 series 4 order random }
}
"""


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_run_piped_with_its_errors_to_head_goes_on_to_its_last_trial(tmp_path, unbuffered):
    spec, store = tmp_path / "piped.bench", tmp_path / "piped.sqlite"
    spec.write_text(SPEC)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONUNBUFFERED", None)
    env.update({"PYTHONUNBUFFERED": "1"} if unbuffered else {})
    read, write = os.pipe()
    run = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store)],
        stdout=write, stderr=write, env=env,
    )  # fmt: skip
    os.close(write)
    first = b""
    while not first.endswith(b"\n"):
        got = os.read(read, 1)
        if not got:
            break
        first += got
    os.close(read)  # head -1 has its line and leaves
    assert run.wait(timeout=120) == 0
    with sqlite3.connect(store) as db:
        assert db.execute("SELECT count(*) FROM trial_rows").fetchone()[0] == 40
