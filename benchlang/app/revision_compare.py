"""``benchlang compare SPEC --base REF [--head REF]``: a pull request's two revisions in one
session (docs/cli.md#compare).

Each revision is checked out into a worktree of its own (``TREES/base``, ``TREES/head``: paths
of one length) and built once; the spec then runs once with the revision as a factor, every
round running every configuration at both revisions in random order (randomized multiple
interleaved trials: Abedi & Brecht, ICPE 2017, §4), in ONE session through the plan, executor
and store every run uses (benchlang.app.worktrees, shared with ``bisect``). The machine's drift
is common to both revisions within a round and cancels in the within-round ratio.

Per (metric, configuration): head/base as the mean within-round log ratio with its paired t
interval (stats.round_contrast). One family over the whole suite: with m rows each interval is
at the two-sided level 1 - 2 alpha / m (Bonferroni), so the one-sided "worse beyond the margin"
tests and the TOST equivalence tests (Schuirmann 1987; stats.equivalence) each run at alpha / m
and a compare calls any false regression with probability at most alpha (Bonferroni's
inequality), whatever the number of benchmarks. The design (the rounds) is the spec's, fixed
before any of the comparison's data is seen: no stopping rule, no look at the estimate, as
stopping on the width or on the verdict would raise the error rates (optional stopping).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import attrs

from benchlang.app.worktrees import (
    build,
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

SLOTS = ("base", "head")
"""Names of one length: the worktrees' paths and the trials' environments have one size."""
DEFAULT_ROUNDS = 10
"""Rounds when the spec's design has fewer than 2: a paired t interval needs 2 at least."""
UNDEFINED = {
    "*": "fewer than 2 rounds had both revisions measured (failed trials, or a value <= 0)"
}


@attrs.frozen
class RevisionRow:
    """One (metric, configuration): head/base with its interval at the family's row level."""

    metric: str
    configuration: str
    better: str
    ratio: tuple[float, float, float]
    """(estimate, lower, upper) of head/base."""
    rounds: int
    verdict: str

    def to_dict(self) -> dict:
        return undefined(attrs.asdict(self), UNDEFINED)


@attrs.frozen
class RevisionCompare:
    spec: str
    base: dict
    head: dict
    rows: tuple[RevisionRow, ...]
    method: dict
    store: str | None
    notes: tuple[str, ...] = ()

    @property
    def worse(self) -> list[RevisionRow]:
        return [r for r in self.rows if r.verdict == "worse"]

    @property
    def unmeasured(self) -> list[RevisionRow]:
        """Rows with fewer than 2 rounds measured at both revisions: nothing was compared."""
        return [r for r in self.rows if r.rounds < 2]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(("worse", "better", "equivalent", "inconclusive"), 0)
        for r in self.rows:
            out[r.verdict] += 1
        return out

    def to_dict(self) -> dict:
        return attrs.asdict(self, recurse=False) | {
            "rows": [r.to_dict() for r in self.rows],
            "counts": self.counts(),
        }


def judge(grids: dict, better: dict[str, str], margin: float, alpha: float) -> tuple:
    """Every (metric, configuration)'s head/base (grids: rounds x [base, head]) and its
    verdict, Bonferroni over the rows: (rows, the row's two-sided confidence in percent)."""
    from benchlang.stats.equivalence import equivalence, tost_confidence
    from benchlang.stats.round_contrast import round_contrast

    row_alpha = alpha / max(1, len(grids))
    level = tost_confidence(row_alpha)
    rows = []
    for (metric, config), x in grids.items():
        c = round_contrast(x, (-1.0, 1.0), level)
        side = better.get(metric, "lower")
        gate = equivalence(*c.ratio[1:], margin, alpha=row_alpha, better=side)
        rows.append(RevisionRow(metric, config, side, c.ratio, c.rounds, gate.verdict))
    return tuple(rows), level


def _revision(root: Path, rev: str, sha: str) -> dict:
    subject = git(root, "log", "-1", "--format=%s", sha).stdout.strip()
    return {"ref": rev, "commit": sha, "subject": subject}


def compare_revisions(
    spec: str | Path,
    base: str,
    head: str | None = None,
    *,
    build_command: str | None = None,
    margin: float = 0.02,
    confidence: float = 95.0,
    keep: str | Path | None = None,
) -> RevisionCompare:
    """Build ``base`` and ``head`` (default: HEAD) in worktrees, run the spec's benchmarks at
    both interleaved in one session and judge each head/base against ``margin``; the
    repository is left as it was (worktrees removed, HEAD and branch restored), whatever
    happens."""
    from benchlang.app.spec import load_spec

    spec = Path(spec).resolve()
    if not spec.is_file():
        raise UserError(f"no spec {spec}")
    root = repository(spec, None, "compare")
    head = head or "HEAD"
    shas = {"base": resolve(root, base, "--base"), "head": resolve(root, head, "--head")}
    revs = {"base": base, "head": head}
    notes = []
    if head == "HEAD" and git(root, "status", "--porcelain", "--untracked-files=no").stdout.strip():
        notes.append(
            f"the working tree has uncommitted changes: they are not measured (head is the "
            f"commit {shas['head'][:12]}); commit them to compare them"
        )
    experiment = load_spec(spec).experiment
    runs = experiment.design.runs
    rounds = runs if isinstance(runs, int) and runs >= 2 else DEFAULT_ROUNDS
    rel = spec.parent.relative_to(root)
    state = Path(keep).resolve() if keep else Path(tempfile.mkdtemp(prefix="benchlang-compare-"))
    state.mkdir(parents=True, exist_ok=True)
    store = state / "compare.sqlite"
    if store.exists():
        raise UserError(f"{store} exists: --keep needs a directory without a compare store")
    trees = state / "trees"
    original = original_head(root)
    try:
        slots = {}
        for slot in SLOTS:
            what = f"--{slot} {revs[slot]} ({shas[slot][:12]})"
            slots[slot] = checkout(root, trees, slot, shas[slot])
            failed = build(slots[slot], build_command)
            if failed:
                raise UserError(f"{what}: {failed}", "fix the build, or check --build")
            if not (slots[slot] / rel).is_dir():
                raise UserError(f"{what} has no directory {rel}: the spec's benchmarks run there")
        derived = session_experiment(experiment, spec.parent, slots, rounds, root, "compare")
        seed = session_seed(experiment.seed, shas["head"], int(shas["base"][:8], 16))
        grids = run_session(derived, spec, store, seed, SLOTS)
    finally:
        restore(root, original, trees)
        if not keep:
            shutil.rmtree(state, ignore_errors=True)
        elif trees.is_dir() and not any(trees.iterdir()):
            trees.rmdir()
    better = {m.name: m.better for m in experiment.metrics}
    alpha = (100.0 - confidence) / 100.0
    rows, level = judge(grids, better, margin, alpha)
    missing = [f"{r.configuration} {r.metric}" for r in rows if r.rounds < 2]
    if missing:
        notes.append(
            f"not measured at both revisions in 2 rounds or more (failed trials): "
            f"{', '.join(missing)}; see the trials' errors with --keep DIR and benchlang results"
        )
    method = {
        "design": (
            f"{rounds} rounds, fixed before the data from the spec's design (runs "
            f"{runs}); both revisions in every round, in random order, one session; no "
            "stopping rule"
            if rounds == runs
            else f"{rounds} rounds (the spec's runs {runs} is below 2), fixed before the data"
        ),
        "rounds": rounds,
        "ratio": "head/base: exp of the mean within-round log ratio, paired t interval",
        "margin": margin,
        "confidence": confidence,
        "correction": "bonferroni",
        "rows": len(rows),
        "row_confidence": level,
        "false_worse_per_compare": alpha,
    }
    return RevisionCompare(
        str(spec),
        _revision(root, base, shas["base"]),
        _revision(root, head, shas["head"]),
        rows,
        method,
        str(store) if keep else None,
        tuple(notes),
    )
