"""Second reader: ``benchlang history check`` (the CI gate) exits 0 when its standard output is
closed before it prints (``benchlang history check | head`` where head has left): the CLI maps
BrokenPipeError to exit 0, so a regression passes the gate (design.md: "A gate fails closed").
Found while reviewing cli.leave; it was so before b1f2a4b too."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _history(tmp_path: Path) -> Path:
    """A history of 60 runs, one metric that steps up by 30% after the 40th (Otava's CSV)."""
    rng = np.random.default_rng(3)
    values = rng.normal(10, 0.2, 60) * np.where(np.arange(60) < 40, 1.0, 1.3)
    csv = tmp_path / "series.csv"
    csv.write_text(
        "time,commit,latency\n"
        + "".join(f"{1700000000 + i * 3600},c{i:03d},{v:.4f}\n" for i, v in enumerate(values))
    )
    history = tmp_path / "h.sqlite"
    done = _benchlang(["history", "import", str(csv), "--history", str(history)])
    assert done.returncode == 0, done.stderr
    return history


def _benchlang(
    argv: list[str], unbuffered: bool | None = None, **kwargs
) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if unbuffered is not None:  # Python's stdout unbuffered (-u) or buffered: both are covered
        env.pop("PYTHONUNBUFFERED", None)
        env.update({"PYTHONUNBUFFERED": "1"} if unbuffered else {})
    return subprocess.run(
        [sys.executable, "-m", "benchlang", *argv],
        env=env,
        text=True,
        timeout=60,
        **({"capture_output": True} | kwargs),
    )


def test_the_gate_fails_on_a_regression_when_its_output_is_closed(tmp_path):
    history = _history(tmp_path)
    assert _benchlang(["history", "check", "--history", str(history)]).returncode == 1
    read, write = os.pipe()
    os.close(read)
    try:
        done = _benchlang(
            ["history", "check", "--history", str(history)],
            capture_output=False,
            stdout=write,
            stderr=subprocess.PIPE,
        )
    finally:
        os.close(write)
    assert done.returncode == 1


def _closed(argv: list[str], unbuffered: bool) -> subprocess.CompletedProcess:
    """``benchlang ARGV`` with its standard output a pipe whose reader has left."""
    read, write = os.pipe()
    os.close(read)
    try:
        return _benchlang(
            argv, unbuffered, capture_output=False, stdout=write, stderr=subprocess.PIPE
        )
    finally:
        os.close(write)


def _full(argv: list[str], unbuffered: bool) -> subprocess.CompletedProcess:
    """``benchlang ARGV > /dev/full``: every write fails with ENOSPC."""
    with open("/dev/full", "w") as full:
        return _benchlang(
            argv, unbuffered, capture_output=False, stdout=full, stderr=subprocess.PIPE
        )


NO_SPACE = "benchlang: error: cannot write the output: No space left on device\n"


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_closed_pipe_keeps_each_verdict_and_is_exit_0_without_one(tmp_path, unbuffered):
    """The gate's pass stays 0 and a spec's errors stay 2; a command without a verdict
    (``history list``, output larger than a pipe's buffer) stops with exit 0, silently."""
    history = _history(tmp_path)
    calm = tmp_path / "calm.csv"
    calm.write_text("time,commit,latency\n" + "".join(
        f"{1700000000 + i * 3600},c{i:03d},{10 + 0.01 * (i % 3):.4f}\n" for i in range(30)))  # fmt: skip
    quiet = tmp_path / "calm.sqlite"
    assert _benchlang(["history", "import", str(calm), "--history", str(quiet)]).returncode == 0
    assert _benchlang(["history", "check", "--history", str(quiet)]).returncode == 0
    assert _closed(["history", "check", "--history", str(quiet)], unbuffered).returncode == 0
    good, bad = tmp_path / "good.bench", tmp_path / "bad.bench"
    good.write_text((ROOT / "specs" / "quickstart.bench").read_text())
    bad.write_text("benchlang 1\nexperiment x {\n  nonsense\n}\n")
    done = _closed(["check", str(good), str(bad), str(good)], unbuffered)
    assert done.returncode == 2 and "error" in done.stderr
    listed = _closed(["history", "list", "--history", str(history), "--json"], unbuffered)
    assert (listed.returncode, listed.stderr) == (0, "")
    assert len(_benchlang(["history", "list", "--history", str(history), "--json"]).stdout) > 8192


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_run_with_a_failed_trial_keeps_its_exit_and_every_trial_past_a_closed_pipe(
    tmp_path, unbuffered
):
    """``benchlang run SPEC | head``: the run goes on to its last trial and its exit status
    still says a trial failed (hyperfine's convention), as when its output is read."""
    spec = tmp_path / "fails.bench"
    spec.write_text(
        "benchlang 1\nexperiment fails {\n  factor k in [0, 1]\n"
        '  benchmark b {\n    run "test {k} -eq 0"\n  }\n'
        "  design {\n    runs 3\n  }\n}\n"
    )
    read = _benchlang(["run", str(spec), "--store", str(tmp_path / "read.sqlite")])
    assert read.returncode != 0, read.stderr
    closed = _closed(["run", str(spec), "--store", str(tmp_path / "closed.sqlite")], unbuffered)
    assert closed.returncode == read.returncode, closed.stderr
    counts = []
    for name in ("read", "closed"):
        with sqlite3.connect(tmp_path / f"{name}.sqlite") as db:
            counts.append(db.execute("SELECT count(*) FROM trial_rows").fetchone()[0])
    assert counts[0] == counts[1] == 6


@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize("json", [False, True])
def test_a_full_disk_is_one_line_and_a_failing_exit_for_every_command(tmp_path, json, unbuffered):
    """``> /dev/full``: a small output fails at the last flush, a large one (``--json``) in
    the middle; both say one line, never a traceback; the gate's regression stays 1."""
    history = _history(tmp_path)
    extra = ["--json"] if json else []
    listed = _full(["history", "list", "--history", str(history), *extra], unbuffered)
    assert (listed.returncode, listed.stderr) == (2, NO_SPACE)
    gate = _full(["history", "check", "--history", str(history), *extra], unbuffered)
    assert (gate.returncode, gate.stderr) == (1, NO_SPACE)
    spec = tmp_path / "q.bench"
    spec.write_text((ROOT / "specs" / "quickstart.bench").read_text())
    checked = _full(["check", str(spec)], unbuffered)
    assert (checked.returncode, checked.stderr) == (2, NO_SPACE)
    sized = _full(["size", "--percentile", "50", "--confidence", "95", *extra], unbuffered)
    assert (sized.returncode, sized.stderr) == (2, NO_SPACE)
    helped = _full(["history", "--help"] if json else ["--version"], unbuffered)  # in the parse
    assert (helped.returncode, helped.stderr) == (2, NO_SPACE)


def test_every_verdict_named_is_a_command():
    from benchlang.cli import COMMANDS
    from benchlang.cli.output import VERDICTS

    assert {name.split()[0] for name in VERDICTS} <= set(COMMANDS)
