"""``benchlang bisect``: ``git bisect run`` with benchlang as the oracle, each step decided
within one session (docs/history.md#bisect).

The good and the bad endpoints are checked out into worktrees and built once, and kept. A
first session runs the two interleaved and keeps the (metric, configuration) pairs whose bad
endpoint is worse with confidence. At each commit git names (``git bisect start
--no-checkout``: the user's checkout is never touched) the commit is built in a third worktree
and one session runs the three builds interleaved in random order within rounds
(``SLOTS``; the session's code is shared with ``compare SPEC --base REF``:
worktrees). The step is decided inside that session by the within-round contrast
log mid - (log good + log bad) / 2 with its t interval (stats.round_contrast): ``good`` when
it is below 0 for every pair, ``bad`` when above 0 for one; undecided, the step runs another
session of as many rounds and pools the rounds, up to ``max_rounds``, then answers ``skip``
(exit 125) with the reason, as for a failed build.

Errors compound over the steps (10 steps each wrong 5% of the time name the right commit
0.95^10 = 60% of the time), so the error is spent over the steps actually run
(``step_alpha``): the S = ceil(log2 n) steps planned for n commits share 3/4 of alpha by
Bonferroni's inequality, and every step beyond them (a skipped commit makes git test another;
merges make more than log2 n) spends half of what is left, alpha / 4 · 2^-j for the j-th, so
the sum over any number of steps stays below alpha (a sequential Bonferroni spending: Lan &
DeMets, Biometrika 70(3), 1983). A step's level is split again over its looks and its pairs,
so the whole bisect names a wrong commit with probability at most alpha.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchlang.app.history.worktrees import build as build_tree
from benchlang.app.history.worktrees import (
    checkout,
    git,
    original_head,
    repository,
    resolve,
    restore,
    run_session,
    session_experiment,
    session_seed,
)
from benchlang.errors import UserError
from benchlang.jsonout import undefined

SLOTS = ("old", "mid", "new")
"""The good endpoint, the commit under test, the bad endpoint: names of one length."""
SKIP = 125
PLANNED_SHARE = 0.75
"""The share of alpha the planned ceil(log2 n) steps spend; the rest goes to steps beyond."""
UNDEFINED = {"*": "fewer than 2 rounds had every build measured (failed trials, or a value <= 0)"}
ENDPOINTS = (-1.0, 1.0)
"""new - old: how much worse the bad endpoint is."""
MIDPOINT = (-0.5, 1.0, -0.5)
"""mid - (old + new) / 2 on the log scale: below 0 nearer good, above 0 nearer bad."""


@attrs.frozen
class BisectResult:
    first_bad: str | None
    subject: str
    steps: tuple[dict[str, Any], ...]
    runs: int
    """Sessions run: the endpoints' and every look of every step."""
    log: str
    endpoints: tuple[dict[str, Any], ...] = ()
    method: dict[str, Any] = attrs.field(factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _interval(x: np.ndarray, weights: tuple[float, ...], confidence: float) -> list[float]:
    from benchlang.stats.round_contrast import round_contrast

    return list(round_contrast(x, weights, confidence).ratio)


def endpoint_pairs(
    grids: dict[tuple[str, str], np.ndarray], better: dict[str, str], confidence: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every (metric, configuration)'s bad/good ratio within the endpoints' session, and the
    pairs whose bad endpoint is worse with confidence (Bonferroni over the pairs)."""
    from benchlang.stats.round_contrast import round_contrast

    level = 100.0 - (100.0 - confidence) / max(1, len(grids))
    evidence, regressed = [], []
    for (metric, config), x in grids.items():
        sign = -1.0 if better.get(metric) == "higher" else 1.0
        c = round_contrast(x, ENDPOINTS, level)
        worse = bool(np.isfinite(c.lower) and (c.lower > 0 if sign > 0 else c.upper < 0))
        entry = {"metric": metric, "configuration": config, "bad_vs_good": list(c.ratio)}
        evidence.append(undefined(entry | {"rounds": c.rounds, "regressed": worse}, UNDEFINED))
        if worse:
            regressed.append({"metric": metric, "configuration": config, "sign": sign})
    return evidence, regressed


def _reading(vote: str | None, vs_good: list[float], vs_bad: list[float]) -> str:
    """The verdict in words: an endpoint whose interval holds 1 is the same level."""
    if vote is None:
        return "nearer neither endpoint"
    ratio = vs_good if vote == "good" else vs_bad
    return f"same as {vote}" if ratio[1] <= 1.0 <= ratio[2] else f"nearer {vote}"


def judge(
    grids: dict[tuple[str, str], np.ndarray], regressed: list[dict[str, Any]], confidence: float
) -> tuple[str | None, list[dict[str, Any]]]:
    """good, bad, or None (undecided) for a step's rounds (rounds x [old, mid, new] per pair),
    with the evidence per regressed pair: the midpoint contrast decides; the ratios to each
    endpoint (same level) are what a reader checks (an unchanged commit reads x1 of good)."""
    from benchlang.stats.round_contrast import round_contrast

    evidence: list[dict[str, Any]] = []
    votes: list[str | None] = []
    for pair in regressed:
        x = grids.get((pair["metric"], pair["configuration"]))
        if x is None:
            votes.append(None)
            continue
        sign = pair["sign"]
        c = round_contrast(x, tuple(sign * w for w in MIDPOINT), confidence)
        vote = None
        if np.isfinite(c.lower):
            vote = "bad" if c.lower > 0 else "good" if c.upper < 0 else None
        votes.append(vote)
        vs_good = _interval(x, (-1.0, 1.0, 0.0), confidence)
        vs_bad = _interval(x, (0.0, 1.0, -1.0), confidence)
        evidence.append(
            undefined(
                {
                    "metric": pair["metric"],
                    "configuration": pair["configuration"],
                    "vs_good": vs_good,
                    "vs_bad": vs_bad,
                    "midpoint": [c.estimate, c.lower, c.upper],
                    "rounds": c.rounds,
                    "vote": vote or "undecided",
                    "reading": _reading(vote, vs_good, vs_bad),
                },
                UNDEFINED,
            )
        )
    if "bad" in votes:
        return "bad", evidence
    if votes and all(v == "good" for v in votes):
        return "good", evidence
    return None, evidence


def step_alpha(alpha: float, k: int, planned: int) -> float:
    """The error of the k-th step run (1, 2, ...; skipped steps count): ``alpha · 3/4 / S``
    for the S planned steps, then ``alpha / 4 · 2^-j`` for the j-th beyond them; over any
    number of steps the sum is below alpha (module docstring; Lan & DeMets 1983)."""
    if k <= planned:
        return alpha * PLANNED_SHARE / planned
    return alpha * (1.0 - PLANNED_SHARE) * 0.5 ** (k - planned)


def _session(
    config: dict[str, Any], slots: dict[str, Path], tag: str, look: int, commit: str
) -> tuple[dict[tuple[str, str], np.ndarray], dict[str, str]]:
    from benchlang.app.spec import compile_spec

    spec = Path(config["spec"])
    experiment = compile_spec(spec).experiment
    derived = session_experiment(
        experiment, spec.parent, slots, config["rounds"], Path(config["repo"])
    )
    seed = session_seed(experiment.seed, commit, look)
    store = Path(config["state"]) / f"{tag}-{look}.sqlite"
    better = {m.name: m.better for m in experiment.metrics}
    return run_session(derived, spec, store, seed, SLOTS), better


def step(state: Path) -> int:
    """One ``git bisect run`` step: exit 0 good, 1 bad, 125 skip; evidence appended."""
    config = json.loads((state / "bisect.json").read_text())
    root, trees = Path(config["repo"]), Path(config["trees"])
    found = git(root, "rev-parse", "--verify", "--quiet", "BISECT_HEAD", check=False)
    commit = found.stdout.strip() or git(root, "rev-parse", "HEAD").stdout.strip()
    done = state / "steps.jsonl"
    k = 1 + (sum(1 for line in done.read_text().splitlines() if line) if done.exists() else 0)
    alpha = step_alpha(config["alpha"], k, config["planned_steps"])
    level = 100.0 * (1.0 - alpha / config["looks"] / len(config["regressed"]))
    record: dict[str, Any] = {"commit": commit, "verdict": "skip", "sessions": 0, "evidence": [],
                    "step": k, "alpha": alpha, "level": level}  # fmt: skip
    try:
        mid = checkout(root, trees, "mid", commit)
        failed = build_tree(mid, config["build"])
        rel = Path(config["spec"]).relative_to(root)
        if failed is None and not (mid / rel).is_file():
            failed = f"no spec {rel} at this commit"
        if failed:
            record["reason"] = failed
        else:
            slots = {s: trees / s for s in ("old", "mid", "new")}
            pooled: dict[tuple[str, str], np.ndarray] = {}
            for look in range(config["looks"]):
                grids, _ = _session(config, slots, f"step-{commit[:12]}", look, commit)
                record["sessions"] += 1
                for key, x in grids.items():
                    pooled[key] = np.vstack([pooled[key], x]) if key in pooled else x
                verdict, evidence = judge(pooled, config["regressed"], level)
                record["evidence"] = evidence
                if verdict:
                    record["verdict"] = verdict
                    break
            else:
                rounds = config["rounds"] * config["looks"]
                complete = min((e["rounds"] for e in record["evidence"]), default=0)
                record["reason"] = (
                    f"not decisive after {rounds} rounds (--max-rounds): nearer neither "
                    f"endpoint at {level:.3g}% confidence"
                    if complete >= 2
                    else f"{complete} of {rounds} rounds had every build measured (failed "
                    f"trials: see the stores with --keep)"
                )
    except UserError as err:
        record["reason"] = err.message
    except Exception as err:  # an answer of 1 would read as "bad": skip, and say why
        record["reason"] = f"{type(err).__name__}: {err}"
    except KeyboardInterrupt:
        return 130  # git bisect run stops at an exit code of 128 or more
    with (state / "steps.jsonl").open("a") as out:
        out.write(json.dumps(record) + "\n")
    return {"good": 0, "bad": 1}.get(record["verdict"], SKIP)


def _restore(root: Path, original: str, started: bool, trees: Path) -> None:
    """Leave the repository as it was: no bisect, the same checkout, no worktree of ours."""
    reset = (lambda: git(root, "bisect", "reset", check=False)) if started else None
    restore(root, original, trees, reset)


def planned_steps(root: Path, good: str, bad: str) -> int:
    """ceil(log2 n) for the n commits after ``good`` up to ``bad``: the steps of a bisection
    in which every step decides."""
    n = int(git(root, "rev-list", "--count", f"{good}..{bad}").stdout.strip() or 1)
    return max(1, math.ceil(math.log2(max(n, 2))))


def bisect(
    spec: str | Path,
    good: str,
    bad: str,
    *,
    build: str | None = None,
    repo: str | Path | None = None,
    keep: str | Path | None = None,
    rounds: int | None = None,
    max_rounds: int | None = None,
    confidence: float = 95.0,
) -> BisectResult:
    """Find the first bad commit between ``good`` and ``bad``, each step in one session; the
    repository is left as it was (``git bisect reset``, worktrees removed), whatever happens."""
    from benchlang.app.spec import compile_spec

    spec = Path(spec).resolve()
    root = repository(spec, repo, "bisect")
    if git(root, "status", "--porcelain", "--untracked-files=no").stdout.strip():
        raise UserError(f"{root} has uncommitted changes", "commit or stash them first")
    if (root / ".git" / "BISECT_LOG").exists():
        raise UserError(f"{root} is already bisecting", "git bisect reset")
    good_sha, bad_sha = resolve(root, good, "--good"), resolve(root, bad, "--bad")
    experiment = compile_spec(spec).experiment
    runs = experiment.design.runs
    rounds = rounds or (runs if isinstance(runs, int) and runs >= 2 else 8)
    if max_rounds is not None and max_rounds < rounds:
        raise UserError(f"--max-rounds {max_rounds} is below --rounds {rounds}")
    looks = max(1, (max_rounds or 3 * rounds) // rounds)
    steps = planned_steps(root, good_sha, bad_sha)
    state = Path(keep).resolve() if keep else Path(tempfile.mkdtemp(prefix="benchlang-bisect-"))
    state.mkdir(parents=True, exist_ok=True)
    trees = state / "trees"
    original = original_head(root)
    config: dict[str, object] = {
        "repo": str(root),
        "spec": str(spec),
        "build": build,
        "state": str(state),
        "trees": str(trees),
        "rounds": rounds,
        "looks": looks,
    }
    started = False
    try:
        slots = {}
        for slot, sha in (("old", good_sha), ("new", bad_sha)):
            slots[slot] = checkout(root, trees, slot, sha)
            failed = build_tree(slots[slot], build)
            if failed:
                raise UserError(f"the endpoint {sha[:12]} cannot be measured: {failed}")
        grids, better = _session(config, slots, "endpoints", 0, bad_sha)
        ends, regressed = endpoint_pairs(grids, better, confidence)
        if not regressed:
            shown = "; ".join(
                f"{e['configuration']} {e['metric']} "
                + (f"x{e['bad_vs_good'][0]:.3g}" if e["bad_vs_good"][0] else "not measured")
                for e in ends
            )
            raise UserError(
                f"the bad endpoint {bad} is not worse than the good one {good} with confidence "
                f"within one session of {rounds} rounds ({shown})",
                "nothing to bisect: give more --rounds, or check the revisions",
            )
        alpha = (100.0 - confidence) / 100.0
        per_step = step_alpha(alpha, 1, steps)
        config |= {
            "regressed": regressed,
            "alpha": alpha,
            "planned_steps": steps,
            "level": 100.0 * (1.0 - per_step / looks / len(regressed)),
        }
        (state / "bisect.json").write_text(json.dumps(config))
        started = True  # before start: a Ctrl-C inside it must still reset
        git(root, "bisect", "start", "--no-checkout", bad_sha, good_sha)
        oracle = [sys.executable, "-m", "benchlang", "bisect", "--step", str(state)]
        ran = subprocess.run(
            ["git", "bisect", "run", *oracle], cwd=root, capture_output=True, text=True
        )
        log = git(root, "bisect", "log").stdout
        found = re.search(r"^([0-9a-f]{40}) is the first bad commit", ran.stdout, re.M)
        first = found.group(1) if found else None
        steps_done = (
            tuple(json.loads(s) for s in (state / "steps.jsonl").read_text().splitlines() if s)
            if (state / "steps.jsonl").exists()
            else ()
        )
    finally:
        _restore(root, original, started, trees)
        if not keep:
            shutil.rmtree(state, ignore_errors=True)
    subject = git(root, "log", "-1", "--format=%s", first).stdout.strip() if first else ""
    method = {
        "correction": "bonferroni over the planned steps, then sequential",
        "confidence": confidence,
        "planned_steps": steps,
        "planned_share": PLANNED_SHARE,
        "alpha_per_step": per_step,
        "steps_run": len(steps_done),
        "steps_beyond_planned": max(0, len(steps_done) - steps),
        "looks_per_step": looks,
        "rounds_per_look": rounds,
        "level_per_look": config["level"],
    }
    sessions = 1 + sum(s["sessions"] for s in steps_done)
    return BisectResult(first, subject, steps_done, sessions, log, tuple(ends), method)
