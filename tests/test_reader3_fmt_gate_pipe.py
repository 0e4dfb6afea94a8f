"""Third reader: ``benchlang fmt --check`` is a CI gate (docs/fmt.md: exits 1 when a file is
not formatted; "CI runs benchlang fmt --check specs/*.bench") but is not in
``cli.output.VERDICTS``: with ``--diff`` piped to ``head`` (the reader gone once the diffs
pass the output's buffers) it stops with exit 0, so unformatted specs pass the gate. A gate
fails closed (docs/cli.md "Exit statuses"). It exited 0 there before bcd249b too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MESSY = """benchlang 1
experiment   messy {   factor k in [1,2]
benchmark b { run "echo {k}"
 measure v from stdout regex "([0-9]+)" }
metric v { measure mean }
}
"""


@pytest.mark.parametrize("unbuffered", [False, True])
def test_fmt_check_fails_closed_when_its_diff_is_piped_to_head(tmp_path, unbuffered):
    specs = []
    for i in range(200):  # ~80 KB of diffs: past every buffer
        spec = tmp_path / f"m{i:03d}.bench"
        spec.write_text(MESSY)
        specs.append(str(spec))
    argv = [sys.executable, "-m", "benchlang", "fmt", "--check", "--diff", *specs]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONUNBUFFERED", None)
    env.update({"PYTHONUNBUFFERED": "1"} if unbuffered else {})
    assert subprocess.run(argv, env=env, capture_output=True, timeout=120).returncode == 1
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(argv, env=env, stdout=write, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write)
    assert b"Traceback" not in done.stderr
    assert done.returncode == 1
