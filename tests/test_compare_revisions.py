"""``benchlang compare SPEC --base REF [--head REF]`` on a real git repository the test makes:
two benchmarks that report their own time, the commit's level (``w``: 1.0, then 1.25 from the
last commit; ``v``: 1.0 throughout) times a machine level drifting within the session (+-8%,
a sine over the trials: the trial count lives in the common git directory, which the worktrees
share) times a 3% lognormal trial noise seeded by the trial. Both revisions run interleaved in
every round of one session, so the drift cancels; the repository must be left as it was."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchlang.jsonout import loads
from tests.conftest import cli_here

SPEC = """benchlang 1
experiment suite {
  seed 5
  workdir "."
  benchmark w {
    run "sh work.sh"
    measure time from stdout regex "time ([0-9.]+)"
  }
  benchmark v {
    run "sh steady.sh"
    measure time from stdout regex "time ([0-9.]+)"
  }
  metric time { measure mean unit "s" better lower }
  design { runs 8 }
}
"""

# level x the machine's drift (+-8% over the session's trials) x a 3% trial noise
TIMED = """# {note}
d=$(cd "$(git rev-parse --git-common-dir)" && pwd)
n=$(cat "$d/trials" 2>/dev/null || echo 0); n=$((n + 1)); echo "$n" > "$d/trials"
awk -v level={level} -v n="$n" -v seed="${{BENCHLANG_SEED:-1}}" \\
  'BEGIN {{ srand(seed % 2147483647); u = 1 - rand(); v = rand();
  f = level * (1 + 0.08 * sin(n / 12));
  printf "time %.6f\\n", f * exp(0.03 * sqrt(-2 * log(u)) * cos(6.283185307 * v)) }}'
"""

# c0: the build is broken; c1: fixed (nothing timed changes); c2: w is 25% slower
COMMITS = [
    ("echo 'cc: error: broken' >&2; exit 3", 1.0),
    ("true", 1.0),
    ("true", 1.25),
]
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    env = os.environ | GIT_ENV | {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z"}
    env["GIT_COMMITTER_DATE"] = env["GIT_AUTHOR_DATE"]
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "test")
    (root / "bench.bench").write_text(SPEC)
    (root / "steady.sh").write_text(TIMED.format(note="steady", level=1.0))
    shas = []
    for i, (build, level) in enumerate(COMMITS):
        (root / "build.sh").write_text(build + "\n")
        (root / "work.sh").write_text(TIMED.format(note=f"version {i}", level=level))
        git(root, "add", "bench.bench", "steady.sh", "build.sh", "work.sh")
        git(root, "commit", "-q", "-m", f"change {i}")
        shas.append(git(root, "rev-parse", "HEAD"))
    return root, shas


def compare(*args: str, cwd: Path, spec: str = "bench.bench") -> subprocess.CompletedProcess:
    """``benchlang compare SPEC ARGS`` in this process (``cli_here``); its trials, builds and
    git worktrees are processes."""
    argv = ["compare", spec, *args]
    code, out, err = cli_here(argv, cwd=cwd)
    return subprocess.CompletedProcess(argv, code, out, err)


def left_as_it_was(root: Path, head: str) -> None:
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""
    assert len(git(root, "worktree", "list").splitlines()) == 1


def rows(done: subprocess.CompletedProcess) -> dict[str, dict]:
    doc = loads(done.stdout)
    assert doc["kind"] == "benchlang.compare.revisions"
    return {r["configuration"]: r for r in doc["rows"]}


def test_a_regression_at_head_is_worse_and_exits_1(repo, tmp_path):
    root, shas = repo
    summary = tmp_path / "summary.md"
    keep = tmp_path / "kept"
    done = compare(
        "--base", shas[1], "--build", "sh build.sh", "--json", "--summary", str(summary),
        "--keep", str(keep), cwd=root,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    by = rows(done)
    assert by["w"]["verdict"] == "worse"
    estimate, lower, upper = by["w"]["ratio"]
    assert lower <= 1.25 <= upper and lower > 1.02 and 1.15 < estimate < 1.35
    assert by["w"]["rounds"] == 8
    assert by["v"]["verdict"] != "worse"
    assert by["v"]["ratio"][1] <= 1.0 <= by["v"]["ratio"][2]
    doc = loads(done.stdout)
    assert doc["head"]["commit"] == shas[2] and doc["base"]["commit"] == shas[1]
    assert doc["method"]["rows"] == 2 and doc["method"]["row_confidence"] == pytest.approx(95.0)
    text = summary.read_text()
    assert "| w | time |" in text and "**worse**" in text and "regression" in text
    assert (keep / "compare.sqlite").is_file() and not (keep / "trees").exists()
    left_as_it_was(root, shas[2])


def test_a_a_base_against_base_in_two_worktrees_is_not_worse(repo):
    root, shas = repo
    done = compare("--base", shas[1], "--head", shas[1], "--margin", "5%", "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    for row in rows(done).values():
        assert row["verdict"] in ("equivalent", "inconclusive")
        assert row["rounds"] == 8 and 0.95 < row["ratio"][0] < 1.05
    left_as_it_was(root, shas[2])
    text = compare("--base", shas[0], "--head", shas[1], cwd=root)
    assert text.returncode == 0, text.stderr
    assert "worse" not in text.stdout.split("\n\n")[1]
    assert "0 worse" in text.stdout


def test_a_failed_build_exits_2_naming_the_revision(repo):
    root, shas = repo
    done = compare("--base", shas[0], "--build", "sh build.sh", cwd=root)
    assert done.returncode == 2
    assert shas[0][:12] in done.stderr and "--base" in done.stderr
    assert "build failed (exit 3)" in done.stderr and "broken" in done.stderr
    assert "Traceback" not in done.stderr
    left_as_it_was(root, shas[2])


def test_the_two_forms_do_not_mix(repo):
    root, shas = repo
    done = compare(cwd=root)
    assert done.returncode == 2 and "--base" in done.stderr
    done = compare("--base", shas[0], "--store", "x.sqlite", cwd=root)
    assert done.returncode == 2 and "--store" in done.stderr
    done = compare("--base", shas[0], "--runs", "5", cwd=root)
    assert done.returncode == 2 and "--runs" in done.stderr
    done = compare("--base", "no-such-ref", cwd=root)
    assert done.returncode == 2 and "no-such-ref" in done.stderr
    left_as_it_was(root, shas[2])


def test_ctrl_c_leaves_the_repository_as_it_was(repo):
    """SIGINT to the whole process group (a terminal's Ctrl-C) once trials are running: exit
    130, the worktrees removed, the checkout as it was. A process by necessity: the signal
    goes to its process group."""
    import signal
    import time

    root, shas = repo
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchlang", "compare", "bench.bench", "--base", shas[1]],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not (root / ".git" / "trials").exists() and proc.poll() is None:
        assert time.monotonic() < deadline, "no trial ever ran"
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    left_as_it_was(root, shas[2])


def test_a_benchmark_measured_at_neither_revision_exits_2(repo):
    """Nothing compared is not a pass: exit 2, naming the configuration."""
    root, shas = repo
    (root / "broken.bench").write_text(SPEC.replace("sh steady.sh", "sh no-such-script.sh"))
    try:
        done = compare("--base", shas[1], cwd=root, spec="broken.bench")
    finally:
        (root / "broken.bench").unlink()
    assert done.returncode == 1, done.stderr  # w is worse: that is said first
    assert "v              time              n/a  not measured" in done.stdout
    done = compare("--base", shas[1], "--head", shas[1], "--build", "rm steady.sh", cwd=root)
    assert done.returncode == 2 and "not measured at both revisions" in done.stderr
    assert "v time" in done.stderr
    left_as_it_was(root, shas[2])
