"""Third reader: with standard output closed (``benchlang ... >&-``, a service started without
one) Python sets ``sys.stdout`` to None; ``cli.output.install`` leaves it so, and
``output.flushed`` then calls ``sys.stdout.flush()``: every command ends in an AttributeError
traceback and exit 1, ``check`` of a valid spec, ``fmt --check``, ``--version``, and ``history
add``/``bundle`` after they have written their history or archive. At add6814 (before
bcd249b) these exited 0 without a word (docs/cli.md: errors without a traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SPEC = """benchlang 1
experiment closed {
  factor k in [1, 2]
  benchmark b {
    run "echo {k}"
    measure v from stdout regex "([0-9]+)"
  }
  metric v { measure mean }
}
"""


@pytest.mark.parametrize("command", [["check", "SPEC"], ["fmt", "--check", "SPEC"], ["--version"]])
def test_a_command_with_its_standard_output_closed_exits_as_before(tmp_path, command):
    spec = tmp_path / "closed.bench"
    spec.write_text(SPEC)
    argv = [str(spec) if a == "SPEC" else a for a in command]
    assert subprocess.run(
        [sys.executable, "-m", "benchlang", *argv],
        env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, timeout=60,
    ).returncode == 0  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", *argv],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(1),  # >&-
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0
