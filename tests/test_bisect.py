"""``benchlang bisect`` on a real git repository the test creates: 16 commits, a script whose
sleep (and the time it reports) grows at a known commit; bisect must name that commit within log2(16) + 2 runs of the
spec and leave the repository as it was."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

SPEC = """benchlang 1
experiment work {
  seed 3
  workdir "."
  benchmark w {
    run "sh work.sh"
    measure time from stdout regex "time ([0-9.]+)"
  }
  metric time { measure mean unit "s" better lower }
  kpi time { percentile 50 confidence 95% }
  design { runs 8 series 1 }
}
"""

COMMITS, SLOW_AT = 16, 11


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "test")
    (root / "bench.bench").write_text(SPEC)
    shas = []
    for i in range(COMMITS):
        pause = 0.12 if i >= SLOW_AT else 0.02
        # the time the version reports (a spread that depends on the trial only), so that the
        # verdicts do not hang on how busy the machine is
        (root / "work.sh").write_text(
            f'# version {i}\nsleep {pause}\necho "time {pause}$((${{BENCHLANG_TRIAL:-0}} % 7))"\n'
        )
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", f"change {i}")
        shas.append(git(root, "rev-parse", "HEAD"))
    return root, shas


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchlang", *args], cwd=cwd, capture_output=True, text=True
    )


def test_bisect_finds_the_planted_slowdown(repo, tmp_path):
    root, shas = repo
    done = bench("bisect", "bench.bench", "--good", shas[0], "--bad", "main", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    steps = result["steps"]
    assert result["first_bad"] == shas[SLOW_AT], steps
    assert result["subject"] == f"change {SLOW_AT}"
    assert result["runs"] <= math.log2(COMMITS) + 2, steps
    assert all(s["verdict"] in ("good", "bad") for s in steps), steps
    assert "first bad commit" in result["log"]
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert not (root / ".git" / "BISECT_LOG").exists()
    assert git(root, "status", "--porcelain") == ""


def test_bisect_refuses_what_it_cannot_use(repo, tmp_path):
    root, shas = repo
    missing = bench("bisect", "bench.bench", "--good", "deadbeef", "--bad", "main", cwd=root)
    assert missing.returncode == 2
    assert missing.stderr.startswith("benchlang: error: --good deadbeef: no such commit")
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", root.as_uri(), str(shallow)], check=True)
    cut = bench("bisect", "bench.bench", "--good", shas[0], "--bad", "HEAD", cwd=shallow)
    assert cut.returncode == 2
    assert "shallow" in cut.stderr and "Traceback" not in cut.stderr
    assert len(cut.stderr.strip().splitlines()) == 2  # the error and its hint
    same = bench("bisect", "bench.bench", "--good", shas[0], "--bad", shas[1], cwd=root)
    assert same.returncode == 2, same.stdout + same.stderr
    assert "is not slower than the good one" in same.stderr
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(root, "status", "--porcelain") == ""


def test_ctrl_c_leaves_the_repository_as_it_was(repo):
    """SIGINT to the whole process group (what a terminal's Ctrl-C sends) while git bisects:
    benchlang resets the bisect and checks the branch out again."""
    import os
    import signal
    import time

    root, shas = repo
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "bisect", "bench.bench", "--good", shas[0],
         "--bad", "main"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not (root / ".git" / "BISECT_LOG").exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "bisect never started"
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert not (root / ".git" / "BISECT_LOG").exists()
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(root, "status", "--porcelain") == ""
