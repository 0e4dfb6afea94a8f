"""``benchlang report STORE -o /dev/stdout | ...``: the page goes whole down the pipe and the
"wrote ..." line to standard error (it once landed after ``</html>``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from benchlang.cli import main

ROOT = Path(__file__).resolve().parents[1]
BENCHLANG = [sys.executable, "-m", "benchlang"]
SPEC = """benchlang 1
experiment page {
  seed 5
  factor k in [1, 2]
  benchmark draw {
    run "awk -v k={k} -v t=$BENCHLANG_TRIAL 'BEGIN {{ print k + (t % 7) / 100 }}'"
    measure v from stdout regex "^([0-9.]+)"
  }
  metric v { measure mean unit "s" better lower }
  design { runs 5 series 1 order random }
}
"""


def test_the_page_to_stdout_stays_whole_and_the_note_goes_to_stderr(tmp_path, capsys):
    spec, store = tmp_path / "page.bench", tmp_path / "page.sqlite"
    spec.write_text(SPEC)
    assert main(["run", str(spec), "--store", str(store), "-q"]) == 0
    capsys.readouterr()
    done = subprocess.run(
        [*BENCHLANG, "report", str(store), "--no-figures", "-o", "/dev/stdout"],
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("</html>")
    assert "wrote /dev/stdout" in done.stderr and "wrote" not in done.stdout.split("</html>")[-1]
    to_file = tmp_path / "page.html"
    assert main(["report", str(store), "--no-figures", "-o", str(to_file)]) == 0
    assert capsys.readouterr().out.startswith(f"wrote {to_file} (")
