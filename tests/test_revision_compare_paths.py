"""The A/A proof of ``compare SPEC --base REF``'s two worktrees: base against base,
measured by instructions under cachegrind (a count that moves with the environment's size,
which holds the working directory's path as ``PWD``: DataMill's hidden factor), through the
CLI in process. With paths of one length (``TREES/base``, ``TREES/head``) and environments of
one size, every round's two counts are equal, so head/base is exactly 1; the same command run
directly with environments of a few sizes shows that the count would have moved (which sizes
move it depends on the machine's stack alignment, so several are tried)."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from benchlang.cli import main

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind not installed")

SPEC = """benchlang 1
experiment paths {
  seed 11
  workdir "."
  benchmark gz {
    run "gzip -1 -c data.txt > /dev/null"
    measure i = sim_instructions
  }
  metric i { measure mean better lower }
  design { runs 2 }
}
"""
GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True,
        env=os.environ | GIT_ENV,
    ).stdout.strip()  # fmt: skip


def instructions(directory: Path, pad: int = 0) -> int:
    """gzip's instruction count in ``directory``, its environment PATH and ``pad`` bytes."""
    env = {"PATH": os.environ["PATH"]} | ({"PAD": "b" * pad} if pad else {})
    done = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
         "gzip", "-1", "-c", "data.txt"],
        cwd=directory, capture_output=True, env=env,
    )  # fmt: skip
    line = next(x for x in done.stderr.decode().splitlines() if "I   refs:" in x)
    return int(line.split(":")[1].replace(",", ""))


def test_base_against_base_in_the_two_worktrees_counts_the_same(tmp_path, capsys, monkeypatch):
    rng = random.Random(52)
    words = " ".join(f"w{rng.randint(0, 5000)}" for _ in range(4000))
    (tmp_path / "data.txt").write_text(words)
    counts = {instructions(tmp_path, pad) for pad in (1, 24, 60, 200)}
    assert len(counts) > 1, counts  # the environment's size moves the count

    root = tmp_path / "project"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "test")
    (root / "bench.bench").write_text(SPEC)
    (root / "data.txt").write_text(words)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    monkeypatch.chdir(root)
    code = main(["compare", "bench.bench", "--base", "HEAD", "--head", "HEAD", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    (row,) = json.loads(out)["rows"]
    assert row["metric"] == "i" and row["rounds"] == 2
    assert row["ratio"] == [1.0, 1.0, 1.0]  # every round: base's count == head's count
    assert (
        git(root, "status", "--porcelain") == ""
        and len(git(root, "worktree", "list").splitlines()) == 1
    )
