"""``benchlang bisect``: ``git bisect run`` with benchlang as the oracle (docs/history.md).

The good and bad endpoints are run once and kept. At each commit git checks out, the step
builds (``--build``), runs the spec into a store of its own and compares it with both endpoints
as ``diff`` does (each configuration's ratio of the KPI percentile with a cluster-bootstrap
interval, stats.two_sample): ``bad`` when it is slower than the good endpoint with confidence,
``good`` when it is faster than the bad one with confidence, the nearer endpoint (on the log
scale) when both hold, else ``skip`` (exit 125), also when the build or the run fails. ``git bisect reset`` always runs, even on Ctrl-C.
"""

from __future__ import annotations

import json
import math
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs

from benchlang.errors import UserError

SKIP = 125


@attrs.frozen
class BisectResult:
    first_bad: str | None
    subject: str
    steps: tuple[dict, ...]
    runs: int
    log: str

    def to_dict(self) -> dict:
        return attrs.asdict(self)


def _git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["failed"])[0]
        raise UserError(f"git {' '.join(args)}: {first}")
    return done


def _resolve(repo: Path, rev: str, what: str) -> str:
    done = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if done.returncode == 0:
        return done.stdout.strip()
    if _git(repo, "rev-parse", "--is-shallow-repository", check=False).stdout.strip() == "true":
        raise UserError(
            f"{what} {rev}: not in this clone, which is shallow (its history is cut)",
            "fetch the history: git fetch --unshallow (CI: actions/checkout with fetch-depth: 0)",
        )
    raise UserError(f"{what} {rev}: no such commit in {repo}")


def _run_spec(spec: Path, store: Path, build: str | None, repo: Path) -> str | None:
    """Build and run the spec into ``store``; why it failed, or None."""
    if build:
        done = subprocess.run(build, shell=True, cwd=repo, capture_output=True, text=True)
        if done.returncode != 0:
            return f"build failed (exit {done.returncode})"
    if not spec.is_file():
        return f"no spec {spec} at this commit"
    argv = [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store), "-q"]
    done = subprocess.run(argv, cwd=repo, capture_output=True, text=True)
    if done.returncode != 0:
        return f"the run failed (exit {done.returncode}): {done.stderr.strip()[-200:]}"
    return None


def judge(step: Path, good: Path, bad: Path, confidence: float = 95.0) -> tuple[str, list[dict]]:
    """good, bad or skip for a step's store, with the evidence per configuration."""
    from benchlang.app.diff import diff_stores

    to_good = diff_stores(good, step, confidence=confidence)
    to_bad = diff_stores(bad, step, confidence=confidence)
    evidence, votes = [], []
    for mg, mb in zip(to_good.metrics, to_bad.metrics, strict=True):
        lower_better = mg.better == "lower"
        for rg, rb in zip(mg.rows, mb.rows, strict=True):
            g, b = rg.interval, rb.interval
            slower_than_good = (g.lower > 1) if lower_better else (g.upper < 1)
            faster_than_bad = (b.upper < 1) if lower_better else (b.lower > 1)
            if slower_than_good and faster_than_bad:  # between the two: the nearer decides
                vote = "good" if abs(math.log(g.ratio)) < abs(math.log(b.ratio)) else "bad"
            else:
                vote = "bad" if slower_than_good else "good" if faster_than_bad else "skip"
            votes.append(vote)
            evidence.append(
                {
                    "metric": mg.metric,
                    "configuration": rg.label,
                    "vs_good": [g.ratio, g.lower, g.upper],
                    "vs_bad": [b.ratio, b.lower, b.upper],
                    "vote": vote,
                }
            )
    if votes and "bad" in votes:
        return "bad", evidence
    if votes and all(v == "good" for v in votes):
        return "good", evidence
    return "skip", evidence


def step(state: Path) -> int:
    """One ``git bisect run`` step: exit 0 good, 1 bad, 125 skip; evidence appended."""
    config = json.loads((state / "bisect.json").read_text())
    repo = Path(config["repo"])
    commit = _git(repo, "rev-parse", "HEAD").stdout.strip()
    store = state / f"step-{commit[:12]}.sqlite"
    failed = _run_spec(Path(config["spec"]), store, config["build"], repo)
    if failed:
        verdict, evidence = "skip", [{"reason": failed}]
    else:
        try:
            verdict, evidence = judge(store, Path(config["good_store"]), Path(config["bad_store"]))
        except UserError as err:
            verdict, evidence = "skip", [{"reason": err.message}]
    with (state / "steps.jsonl").open("a") as out:
        out.write(json.dumps({"commit": commit, "verdict": verdict, "evidence": evidence}) + "\n")
    return {"good": 0, "bad": 1}.get(verdict, SKIP)


def _endpoint(repo: Path, rev: str, spec: Path, store: Path, build: str | None) -> None:
    _git(repo, "checkout", "--quiet", "--detach", rev)
    failed = _run_spec(spec, store, build, repo)
    if failed:
        raise UserError(f"the endpoint {rev[:12]} cannot be measured: {failed}")


def _restore(root: Path, original: str, started: bool) -> None:
    """Leave the repository as it was: no bisect, the same checkout, no change to a tracked
    file (the tree was clean before; a Ctrl-C inside a checkout can leave the index half-way).
    A second Ctrl-C does not interrupt this."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are not ours to handle
        previous = None
    try:
        if started:
            _git(root, "bisect", "reset", check=False)
        _git(root, "checkout", "--quiet", "--force", original, check=False)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def bisect(
    spec: str | Path,
    good: str,
    bad: str,
    *,
    build: str | None = None,
    repo: str | Path | None = None,
    keep: str | Path | None = None,
) -> BisectResult:
    """Find the first bad commit between ``good`` and ``bad``; the repository is left as it
    was (``git bisect reset``), whatever happens."""
    spec = Path(spec).resolve()
    where = Path(repo) if repo else spec.parent
    top = _git(where, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        raise UserError(f"{where} is not inside a git repository", "pass --repo DIR")
    root = Path(top.stdout.strip())
    if _git(root, "status", "--porcelain", "--untracked-files=no").stdout.strip():
        raise UserError(f"{root} has uncommitted changes", "commit or stash them first")
    if (root / ".git" / "BISECT_LOG").exists():
        raise UserError(f"{root} is already bisecting", "git bisect reset")
    good_sha, bad_sha = _resolve(root, good, "--good"), _resolve(root, bad, "--bad")
    state = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="benchlang-bisect-"))
    state.mkdir(parents=True, exist_ok=True)
    head = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip()
    original = head or _git(root, "rev-parse", "HEAD").stdout.strip()
    config = {
        "repo": str(root),
        "spec": str(spec),
        "build": build,
        "good_store": str(state / "good.sqlite"),
        "bad_store": str(state / "bad.sqlite"),
    }
    (state / "bisect.json").write_text(json.dumps(config))
    ends = ("good_store", "bad_store")
    started = False
    try:
        _endpoint(root, good_sha, spec, Path(config["good_store"]), build)
        _endpoint(root, bad_sha, spec, Path(config["bad_store"]), build)
        verdict, _ = judge(Path(config["bad_store"]), *(Path(config[k]) for k in ends))
        if verdict != "bad":
            raise UserError(
                f"the bad endpoint {bad} is not slower than the good one {good} with confidence",
                "nothing to bisect: run both endpoints with more runs, or check the revisions",
            )
        _git(root, "checkout", "--quiet", original)
        started = True  # before start: a Ctrl-C inside it must still reset
        _git(root, "bisect", "start", bad_sha, good_sha)
        oracle = [sys.executable, "-m", "benchlang", "bisect", "--step", str(state)]
        ran = subprocess.run(
            ["git", "bisect", "run", *oracle], cwd=root, capture_output=True, text=True
        )
        log = _git(root, "bisect", "log").stdout
        found = re.search(r"^([0-9a-f]{40}) is the first bad commit", ran.stdout, re.M)
        first = found.group(1) if found else None
    finally:
        _restore(root, original, started)
    steps = (
        tuple(json.loads(line) for line in (state / "steps.jsonl").read_text().splitlines() if line)
        if (state / "steps.jsonl").exists()
        else ()
    )
    subject = _git(root, "log", "-1", "--format=%s", first).stdout.strip() if first else ""
    return BisectResult(first, subject, steps, 2 + len(steps), log)
