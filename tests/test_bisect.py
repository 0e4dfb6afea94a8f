"""``benchlang bisect`` on a real git repository the test creates, whose benchmark reports its
own time: the commit's level (1.0, 1.4 from the planted commit on) times a session factor that
moves by a lognormal 10% each time benchlang starts a session (the spec's ``setup`` draws it:
the setup runs once per session) times a 3% trial noise. Each step runs the commit with both
endpoints interleaved in one session, so the drift between sessions cancels; bisect must name
the planted commit and leave the repository as it was."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SPEC = """benchlang 1
experiment work {
  seed 3
  workdir "."
  setup "sh session.sh"
  benchmark w {
    run "sh work.sh"
    measure time from stdout regex "time ([0-9.]+)"
  }
  metric time { measure mean unit "s" better lower }
  kpi time { percentile 50 confidence 95% }
  design { runs 6 series 1 }
}
"""

# The machine's state lives in the repository's common git directory, which every worktree of
# it shares: a new session's factor (lognormal, sigma 10%, seeded by the count of sessions so
# far) is drawn by the spec's setup, which runs once per session; every factor is kept in
# drift-factors.
SESSION = """d=$(cd "$(git rev-parse --git-common-dir)" && pwd)
n=$(cat "$d/drift-sessions" 2>/dev/null || echo 0); n=$((n + 1))
echo "$n" > "$d/drift-sessions"
awk -v n="$n" 'BEGIN { srand(n * 7919); u = 1 - rand(); v = rand();
  printf "%.6f\\n", exp(0.10 * sqrt(-2 * log(u)) * cos(6.283185307 * v)) }' > "$d/drift-factor"
cat "$d/drift-factor" >> "$d/drift-factors"
"""

# the commit's level x the session's factor x a 3% lognormal trial noise seeded by the trial
WORK = """# version {i}
d=$(cd "$(git rev-parse --git-common-dir)" && pwd)
awk -v level={level} -v s="$(cat "$d/drift-factor")" -v seed="${{BENCHLANG_SEED:-1}}" \\
  'BEGIN {{ srand(seed % 2147483647); u = 1 - rand(); v = rand();
  printf "time %.6f\\n", level * s * exp(0.03 * sqrt(-2 * log(u)) * cos(6.283185307 * v)) }}'
"""

COMMITS, SLOW_AT = 12, 7
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str, at: int = 0) -> str:
    stamp = f"2026-01-01T00:{at:02d}:00Z"
    env = os.environ | GIT_ENV | {"GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def drift_repo(root: Path, levels: list[float] | None = None) -> list[str]:
    """The repository (in ``root``, made if missing): a commit per level (by default 1.0, 1.4
    from SLOW_AT on), fixed commit dates so the hashes are the same on every machine (the docs
    test's transcript in docs/history.md is this repository's); other files are excluded."""
    levels = levels or [1.4 if i >= SLOW_AT else 1.0 for i in range(COMMITS)]
    root.mkdir(exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "test")
    (root / ".git" / "info" / "exclude").write_text("/*\n!/bench.bench\n!/work.sh\n!/session.sh\n")
    (root / "bench.bench").write_text(SPEC)
    (root / "session.sh").write_text(SESSION)
    shas = []
    for i, level in enumerate(levels):
        (root / "work.sh").write_text(WORK.format(i=i, level=level))
        git(root, "add", "bench.bench", "session.sh", "work.sh")
        git(root, "commit", "-q", "-m", f"change {i}", at=i)
        shas.append(git(root, "rev-parse", "HEAD"))
    return shas


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, list[str]]:
    return tmp_path / "project", drift_repo(tmp_path / "project")


def bench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "benchlang", *args], cwd=cwd, capture_output=True, text=True
    )


def left_as_it_was(root: Path) -> None:
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD") == "main"
    assert not (root / ".git" / "BISECT_LOG").exists()
    assert git(root, "status", "--porcelain") == ""
    assert len(git(root, "worktree", "list").splitlines()) == 1


def test_bisect_names_the_planted_commit_under_drift_between_sessions(repo, tmp_path):
    root, shas = repo
    done = bench(
        "bisect", "bench.bench", "--good", shas[0], "--bad", "main", "--json",
        cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    steps = result["steps"]
    assert result["first_bad"] == shas[SLOW_AT], steps
    assert result["subject"] == f"change {SLOW_AT}"
    factors = int((root / ".git" / "drift-sessions").read_text())
    assert factors == result["runs"] >= 4  # each session drew its own level
    method = result["method"]
    assert method["correction"].startswith("bonferroni") and method["planned_steps"] == 4
    assert method["alpha_per_step"] == pytest.approx(0.05 * 0.75 / 4)
    assert method["steps_beyond_planned"] == 0
    assert all(s["verdict"] in ("good", "bad") for s in steps), steps
    assert result["runs"] == 1 + len(steps)  # every step decided in its first session
    for s in steps:
        (e,) = s["evidence"]
        same, other = (e["vs_good"], e["vs_bad"]) if s["verdict"] == "good" else (
            e["vs_bad"], e["vs_good"])  # fmt: skip
        assert same[1] < 1 < same[2], s  # unchanged reads as unchanged
        assert e["reading"] == f"same as {s['verdict']}"
        assert not other[1] < 1 < other[2], s
        assert abs(math.log(other[0])) == pytest.approx(math.log(1.4), rel=0.15)
        assert e["rounds"] == 6
    (end,) = result["endpoints"]
    assert end["regressed"] and end["bad_vs_good"][0] == pytest.approx(1.4, rel=0.05)
    assert "first bad commit" in result["log"]
    left_as_it_was(root)


def test_text_output_says_the_method(repo, tmp_path):
    root, shas = repo
    done = bench(
        "bisect", "bench.bench", "--good", shas[5], "--bad", shas[8], "--rounds", "4",
        cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    shown = re.search(
        r"^endpoints  w: x([\d.]+) of good \[([\d.]+), ([\d.]+)\]: regressed$", out, re.M
    )
    assert shown and float(shown[2]) < 1.4 < float(shown[3]), out
    assert "Bonferroni: 3.75% of 5% over 2 planned steps" in out
    assert f"first bad commit: {shas[SLOW_AT]} change {SLOW_AT}" in out
    assert "w: same as good: x" in out or "w: same as bad: x" in out
    assert "(4 rounds, 1 session)" in out
    left_as_it_was(root)


def test_an_undecidable_step_runs_more_rounds_then_is_skipped(tmp_path):
    """A commit exactly between the endpoints (the geometric mean) is nearer neither: the step
    pools sessions up to --max-rounds and answers skip with the reason; git cannot name one
    commit and bisect says so (exit 1)."""
    root = tmp_path / "between"
    shas = drift_repo(root, [1.0, math.sqrt(1.4), 1.4])
    done = bench(
        "bisect", "bench.bench", "--good", shas[0], "--bad", shas[2], "--rounds", "3",
        "--max-rounds", "6", "--json", cwd=root,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout, done.stdout + done.stderr
    result = json.loads(done.stdout)
    (step,) = result["steps"]
    assert step["commit"] == shas[1] and step["verdict"] == "skip"
    assert step["sessions"] == 2 and step["evidence"][0]["rounds"] == 6
    assert step["reason"].startswith("not decisive after 6 rounds")
    assert result["first_bad"] is None
    left_as_it_was(root)


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
    same = bench(
        "bisect", "bench.bench", "--good", shas[0], "--bad", shas[1], "--rounds", "4",
        cwd=root,
    )  # fmt: skip
    assert same.returncode == 2, same.stdout + same.stderr
    assert "is not worse than the good one" in same.stderr and "x1" in same.stderr
    few = bench("bisect", "bench.bench", "--good", shas[0], "--bad", "main", "--rounds", "1",
                cwd=root)  # fmt: skip
    assert few.returncode == 2 and "at least 2 rounds" in few.stderr
    (root / "abs.bench").write_text(SPEC.replace('workdir "."', f'workdir "{root}"'))
    git(root, "add", "-f", "abs.bench")
    git(root, "commit", "-q", "-m", "an absolute workdir", at=30)
    fixed = bench("bisect", "abs.bench", "--good", shas[0], "--bad", "main", cwd=root)
    assert fixed.returncode == 2 and "workdir is an absolute path" in fixed.stderr
    left_as_it_was(root)


def test_ctrl_c_leaves_the_repository_as_it_was(repo, tmp_path):
    """SIGINT to the whole process group (what a terminal's Ctrl-C sends) while git bisects:
    benchlang resets the bisect, removes its worktrees and leaves the checkout as it was."""
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
    left_as_it_was(root)


def test_a_failed_build_is_skipped_with_its_reason(repo):
    """--build runs in each build's worktree; where it fails the step answers skip and says
    why, and git bisects around it."""
    root, shas = repo
    done = bench(
        "bisect", "bench.bench", "--good", shas[0], "--bad", "main", "--rounds", "4",
        "--build", "! grep -q '^# version 5$' work.sh", "--json", cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    broken = [s for s in result["steps"] if s["commit"] == shas[5]]
    assert broken and broken[0]["verdict"] == "skip" and broken[0]["sessions"] == 0
    assert broken[0]["reason"] == "build failed (exit 1)"
    assert result["first_bad"] == shas[SLOW_AT]
    left_as_it_was(root)


def test_skipped_commits_spend_what_is_left_of_the_error(repo):
    """Builds that fail at five commits make git test more than the ceil(log2 11) = 4 planned
    steps: the planned ones share 3/4 of the 5% (Bonferroni), each one beyond them half of
    what is left (0.05 / 4 · 2^-j), so the steps' errors sum below 5% however many there are;
    the JSON and the text say it."""
    root, shas = repo
    broken = "! grep -Eq '^# version (2|3|4|5|9)$' work.sh"
    done = bench(
        "bisect", "bench.bench", "--good", shas[0], "--bad", "main", "--rounds", "4",
        "--build", broken, "--json", cwd=root,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)
    steps, method = result["steps"], result["method"]
    assert result["first_bad"] == shas[SLOW_AT]
    assert method["planned_steps"] == 4 and method["steps_run"] == len(steps) > 4, steps
    assert method["steps_beyond_planned"] == len(steps) - 4
    assert any(s["verdict"] == "skip" for s in steps)
    want = [0.05 * 0.75 / 4] * 4 + [0.05 * 0.25 * 0.5**j for j in range(1, len(steps) - 3)]
    assert [s["alpha"] for s in steps] == pytest.approx(want)
    assert [s["step"] for s in steps] == list(range(1, len(steps) + 1))
    assert sum(s["alpha"] for s in steps) < 0.05
    for s in steps:
        assert s["level"] == pytest.approx(100 * (1 - s["alpha"] / method["looks_per_step"]))
    text = bench(
        "bisect", "bench.bench", "--good", shas[0], "--bad", "main", "--rounds", "4",
        "--build", broken, cwd=root,
    )  # fmt: skip
    assert text.returncode == 0, text.stdout + text.stderr
    assert "3.75% of 5% over 4 planned steps; each step beyond them spends half" in text.stdout
    assert f"{len(steps)} steps run, {len(steps) - 4} beyond the planned 4" in text.stdout
    left_as_it_was(root)
