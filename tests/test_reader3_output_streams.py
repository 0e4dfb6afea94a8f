"""The standard streams past the third reader's defects (``cli.output``, ``report.atomic``): a
run whose output cannot be written after every trial ran exits 1, not 2 (2 is a refusal before
anything ran); a character the output's encoding lacks is one line, never a traceback; a
standard error that cannot be written stops nothing; ``-o /dev/stdout`` into a pipe is written
in place. Every command runs as a subprocess, buffered and unbuffered."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from benchlang.report.atomic import replacing
from tests.test_reader2_gate_pipe import _benchlang

ROOT = Path(__file__).resolve().parents[1]

SPEC = """benchlang 1
experiment streams {
  seed 1
  factor k in [1, 2]
  benchmark draw {
    run "echo {k}"
    measure v from stdout regex "([0-9]+)"
  }
  metric v { measure mean unit "s" better lower }
  kpi v { percentile 50 confidence 95% }
  variability v { percentile 25 confidence 75% }
  design { runs 5 series 5 order random }
}
"""


def _trials(store: Path) -> int:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT count(*) FROM trial_rows").fetchone()[0]


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """A store of the 50 trials of ``SPEC``."""
    directory = tmp_path_factory.mktemp("streams")
    spec = directory / "streams.bench"
    spec.write_text(SPEC)
    done = _benchlang(["run", str(spec), "--store", str(directory / "s.sqlite")])
    assert done.returncode == 0, done.stderr
    return directory / "s.sqlite"


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_run_to_a_full_disk_stores_every_trial_and_exits_1(tmp_path, unbuffered):
    spec, store = tmp_path / "streams.bench", tmp_path / "full.sqlite"
    spec.write_text(SPEC)
    with open("/dev/full", "w") as full:
        done = _benchlang(
            ["run", str(spec), "--store", str(store)],
            unbuffered,
            capture_output=False,
            stdout=full,
            stderr=subprocess.PIPE,
        )
    assert done.returncode == 1
    assert done.stderr.endswith(
        "benchlang: error: cannot write the output: No space left on device\n"
    )
    assert "Traceback" not in done.stderr
    assert _trials(store) == 50


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_character_the_output_encoding_lacks_is_one_line(stored, unbuffered):
    read = _benchlang(["record", str(stored)], unbuffered)
    assert read.returncode == 0, read.stderr
    lacking = next(c for c in read.stdout if ord(c) > 127)  # the record's section sign
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONIOENCODING="ascii")
    env.pop("PYTHONUNBUFFERED", None)
    env.update({"PYTHONUNBUFFERED": "1"} if unbuffered else {})
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "record", str(stored)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == (
        f"benchlang: error: cannot write the output: U+{ord(lacking):04X} is not in its "
        "encoding, ascii (PYTHONIOENCODING=utf-8 writes it)\n"
    )
    replaced = dict(env, PYTHONIOENCODING="ascii:replace")  # the user's own handler is kept
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "record", str(stored)],
        env=replaced, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "".join(c if ord(c) < 128 else "?" for c in read.stdout)


@pytest.mark.parametrize("unbuffered", [False, True])
def test_errors_that_cannot_be_written_change_no_status(tmp_path, unbuffered):
    """Standard error on a full disk: the run goes on and exits 0; a spec's errors into a
    closed pipe shared with the output (``2>&1 | head``) still exit 2."""
    spec, store = tmp_path / "streams.bench", tmp_path / "full.sqlite"
    spec.write_text(SPEC)
    with open("/dev/full", "w") as full:
        done = _benchlang(
            ["run", str(spec), "--store", str(store)], unbuffered, stderr=full, capture_output=False
        )
    assert done.returncode == 0
    assert _trials(store) == 50
    bad = tmp_path / "bad.bench"
    bad.write_text("benchlang 1\nexperiment x {\n  nonsense\n}\n")
    read, write = os.pipe()
    os.close(read)
    try:
        done = _benchlang(
            ["check", str(bad), str(spec)],
            unbuffered,
            capture_output=False,
            stdout=write,
            stderr=write,
        )
    finally:
        os.close(write)
    assert done.returncode == 2


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_run_with_its_output_closed_runs_every_trial(tmp_path, unbuffered):
    """``benchlang run SPEC >&-``: nothing to write is no error."""
    spec, store = tmp_path / "streams.bench", tmp_path / "closed.sqlite"
    spec.write_text(SPEC)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONUNBUFFERED", None)
    env.update({"PYTHONUNBUFFERED": "1"} if unbuffered else {})
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store)],
        env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
        preexec_fn=lambda: os.close(1),
    )  # fmt: skip
    assert (done.returncode, "Traceback" in done.stderr) == (0, False), done.stderr
    assert _trials(store) == 50


def test_a_report_to_dev_stdout_is_written_into_the_pipe(stored):
    done = _benchlang(["report", str(stored), "-o", "/dev/stdout"])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<!DOCTYPE html>") and "</body></html>\n" in done.stdout


def test_a_link_to_a_pipe_is_written_in_place(tmp_path):
    read, write = os.pipe()
    try:
        link = tmp_path / "out"
        link.symlink_to(f"/proc/self/fd/{write}")
        with replacing(link, "w", encoding="utf-8") as handle:
            handle.write("through the pipe\n")
        assert os.read(read, 100) == b"through the pipe\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize(
    ("argv", "verdict"),
    [
        (["fmt", "--check", "a.bench"], True),
        (["fmt", "--diff", "a.bench"], False),
        (["fmt", "a.bench"], False),
        (["hosts", "release", "s.sqlite"], True),
        (["hosts", "list", "s.sqlite"], False),
        (["history", "check"], True),
        (["history", "list"], False),
        (["check", "a.bench"], True),
        (["plugins"], False),
    ],
)
def test_a_status_is_a_verdict_by_command_action_or_check_flag(argv, verdict):
    from benchlang.cli import build_parser
    from benchlang.cli.output import is_verdict

    assert is_verdict(build_parser().parse_args(argv)) is verdict
