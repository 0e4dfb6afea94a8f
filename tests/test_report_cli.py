"""``benchlang run --report`` and ``benchlang report`` through the real CLI, the real local
backend and store: values printed from the trial number (deterministic), an adaptive stopping
rule that stops the constant configuration, a profile of seasonal condition data, a failing
trial. The page then has its stopping, profile and failed-trials sections."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from tests.conftest import cli_here

SPEC = """benchlang 1
experiment reported {
  seed 3
  factor k in [1, 2]
  benchmark echo {
    run "sh -c 'if [ $BENCHLANG_TRIAL = 5 ]; then echo broken >&2; exit 3; fi; if [ {k} = 1 ]; then echo value=5; else echo value=$(( ($BENCHLANG_TRIAL * 7919) % 101 + 50 )); fi'"
    measure v from stdout regex "value=([0-9]+)"
  }
  metric v { better lower }
  kpi v { percentile 50 confidence 75% }
  stop adaptive { min 10 max 30 }
  analysis { profile load from file "load.csv" period 2h }
}
"""


def _benchlang(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI in this process (``cli_here``): what is tested is the page, not a process."""
    code, out, err = cli_here(args, cwd=cwd)
    return subprocess.CompletedProcess(args, code, out, err)


def test_run_report_then_report_command(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    t = np.arange(12 * 7 * 4)
    load = np.sin(2 * np.pi * t / 12) + rng.normal(scale=0.3, size=t.size)
    (tmp_path / "load.csv").write_text("load\n" + "".join(f"{v:.5f}\n" for v in load))
    spec = tmp_path / "reported.bench"
    spec.write_text(SPEC)
    done = _benchlang(
        "run", str(spec), "--store", "r.sqlite", "--quiet", "-i", "--report", "run.html",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "wrote the report to run.html" in done.stdout
    page = (tmp_path / "run.html").read_text(encoding="utf-8")
    for ident in ("summary", "timescales", "stopping", "profile", "failures"):
        assert f"<section id='{ident}'>" in page, ident
    stopping = page[page.index("<section id='stopping'>") :]
    stopping = stopping[: stopping.index("</section>")]
    assert "<td>echo[k=1]</td>" in stopping and "<td>constant</td>" in stopping
    assert 'id="fig-stopping-ks"' in page and 'id="fig-profile"' in page  # drawn once, there
    profile = page[page.index("<section id='profile'>") :]
    assert "<td>1d</td>" in profile[: profile.index("</section>")] and "86400" not in page
    assert "broken" in page  # the failed trial's stderr tail

    again = _benchlang("report", "r.sqlite", "-o", "again.html", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "wrote again.html" in again.stdout
    second = (tmp_path / "again.html").read_text(encoding="utf-8")
    assert second.count("<figure") == page.count("<figure")

    missing = _benchlang("report", "nowhere.sqlite", cwd=tmp_path)
    assert missing.returncode == 2
    assert "benchlang: error: no store at nowhere.sqlite" in missing.stderr
