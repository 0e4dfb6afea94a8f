"""The issue's "done when": a 200-commit history built from generated stores (seeded synthetic
values through the real pipeline, benchlang.testing.synthetic) shows its planted change points
in ``history changes`` and in the dashboard (checked in headless Chromium), and ``history
check`` fails on the commit that regresses, not before."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from benchlang.app.history.runs import add_stores
from benchlang.cli import main
from benchlang.testing.synthetic import synthetic_store

SPEC = """benchlang 1
experiment service {
  seed 1
  benchmark handle {
    run "true"
    measure time = wall_time
  }
  metric time { measure mean unit "s" better lower }
  kpi time { percentile 50 confidence 95% }
  design { runs 10 series 1 }
}
"""
COMMITS, REGRESSION, IMPROVEMENT = 200, 80, 140
SCREENSHOTS = Path(
    os.environ.get("BENCHLANG_SCREENSHOTS")
    or Path(tempfile.gettempdir()) / "benchlang-report-screenshots"
)


def level(i: int) -> float:
    return (1.08 if i >= REGRESSION else 1.0) * (0.94 if i >= IMPROVEMENT else 1.0)


def sha(i: int) -> str:
    return hashlib.sha1(f"commit {i}".encode()).hexdigest()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The history, and the gate's exit status just before and at the regressing commit."""
    shm = Path("/dev/shm")  # 200 stores: in memory when the machine has it (2x faster here)
    if shm.is_dir() and os.access(shm, os.W_OK):
        root = Path(tempfile.mkdtemp(prefix="benchlang-history200-", dir=shm))
    else:
        root = tmp_path_factory.mktemp("history200")
    spec = root / "service.bench"
    spec.write_text(SPEC)
    history = str(root / "history.sqlite")
    gates = {}
    for i in range(COMMITS):
        rng = np.random.default_rng(i)
        store = root / "store.sqlite"
        store.unlink(missing_ok=True)
        noise = rng.normal(0.0, 0.01, size=64)
        synthetic_store(spec, store, lambda p, t, i=i, e=noise: {"time": 0.01 * level(i) * float(np.exp(e[t]))})  # fmt: skip
        add_stores(
            [store], history, commit=sha(i), date=f"2026-03-01T00:{i // 60:02d}:{i % 60:02d}Z"
        )
        if i in (REGRESSION - 1, REGRESSION):
            summary = root / f"summary-{i}.md"
            gates[i] = (main(["history", "check", "--history", history, "--summary", str(summary)]),
                        summary.read_text())  # fmt: skip
    yield root, history, gates
    if root.parent == shm:
        shutil.rmtree(root, ignore_errors=True)


def test_check_fails_on_the_regressing_commit(built, capsys):
    _, _, gates = built
    capsys.readouterr()
    assert gates[REGRESSION - 1][0] == 0
    assert gates[REGRESSION][0] == 1
    assert ":x:" in gates[REGRESSION][1] and "| worse" in gates[REGRESSION][1]
    assert ":white_check_mark:" in gates[REGRESSION - 1][1]


def test_changes_finds_the_planted_points(built, capsys):
    _, history, _ = built
    capsys.readouterr()
    assert main(["history", "changes", "--history", history, "--json"]) == 0
    (series,) = json.loads(capsys.readouterr().out)["series"]
    assert series["points"] == COMMITS
    found = [(c["index"], c["kind"], c["commit_after"]) for c in series["changes"]]
    assert found == [
        (REGRESSION, "regression", sha(REGRESSION)),
        (IMPROVEMENT, "improvement", sha(IMPROVEMENT)),
    ]
    first, second = series["changes"]
    assert first["ratio_low"] < 1.08 < first["ratio_high"]
    assert second["ratio_low"] < 0.94 < second["ratio_high"]
    assert main(["history", "changes", "--history", history, "--since", sha(100)[:8]]) == 0
    text = capsys.readouterr().out
    assert text.startswith("1 change point(s) in 1 series") and "improvement" in text


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_dashboard(built, capsys):
    root, history, _ = built
    page = root / "history.html"
    assert main(["history", "report", "--history", history, "-o", str(page)]) == 0
    html = page.read_text()
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html
    table = html[html.index("id='changes'") : html.index("id='series-0'")]
    assert table.index("regression") < table.index("improvement")  # regressions first
    assert f"{sha(REGRESSION - 1)[:10]}..{sha(REGRESSION)[:10]}" in table
    assert re.search(r"\+[78]\.\d%", table) and re.search(r"-[56]\.\d%", table)
    assert html.count("<title>") >= COMMITS  # a commit per point on hover
    assert sha(IMPROVEMENT)[:10] in html
    if chromium() is None:
        pytest.skip("Debian's chromium is not installed (.ci/run installs it)")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shot = SCREENSHOTS / "history.png"
    shot.unlink(missing_ok=True)
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={root / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--window-size=1280,1400", f"--screenshot={shot}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert not [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert "<svg" in done.stdout and "+7." in done.stdout
    assert shot.stat().st_size > 20_000
    print(f"screenshot: {shot}", file=sys.stderr)


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_history_done")
