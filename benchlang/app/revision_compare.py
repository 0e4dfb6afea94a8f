"""``benchlang compare SPEC --base REF [--head REF]``: a pull request's two revisions in one
session (docs/cli.md#compare).

Each revision is checked out into a worktree of its own (``TREES/base``, ``TREES/head``: paths
of one length) and built once; the spec then runs once with the revision as a factor, every
round running every configuration at both revisions in random order (randomized multiple
interleaved trials: Abedi & Brecht, ICPE 2017, §4), in ONE session through the plan, executor
and store every run uses (app.history.worktrees, shared with ``bisect``). The machine's drift
is common to both revisions within a round and cancels in the within-round ratio.

Per (metric, configuration): head/base as the mean within-round log ratio with its paired t
interval (stats.round_contrast). One family over the whole suite: with m rows each interval is
at the two-sided level 1 - 2 alpha / m (Bonferroni), so the one-sided "worse beyond the margin"
tests and the TOST equivalence tests (Schuirmann 1987; stats.equivalence) each run at alpha / m
and a compare calls any false regression with probability at most alpha (Bonferroni's
inequality), whatever the number of benchmarks. Within every round the two builds of one configuration run next to each other (in random
order, the configurations in random order: a randomised block, ``worktrees.blocked``), so a
drift of the machine within the round reaches the contrast over one trial, not over the round.

The design (the rounds) is fixed before any of the comparison's data is judged: the spec's
``runs``, or ``--rounds N``, or Stein's two-stage procedure (``--rounds auto``, the default
when the spec does not fix its runs; stats.two_stage): a pilot of ``--pilot`` rounds gives
each row's spread, the total is sized for the margin at 80% power with the family's alpha,
capped by ``--max-rounds`` and ``--max-time``, and the interval uses the pilot's spread with
its degrees of freedom, so its coverage holds exactly. No stopping rule, no look at the
estimate: stopping on the width or on the verdict raises the error rates (optional stopping).
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from pathlib import Path

import attrs
import numpy as np

from benchlang.app.history.worktrees import (
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
PILOT_ROUNDS = 10
"""Stein's pilot: with 9 degrees of freedom t_{0.995} is 3.25 (4.60 with 4), so a pilot of 10
costs fewer rounds in all than a shorter one at a suite's Bonferroni level."""
MAX_ROUNDS = 100
POWER = 0.8
FIXED_RUNS = ("given in the spec", "stop after N")
"""The runs_reason of a spec that fixes its runs (lang.check.design)."""
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
    stores: tuple[str, ...] = ()
    """Every store kept (``--keep``): the pilot's, then the second stage's."""

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


def judge(
    grids: dict, better: dict[str, str], margin: float, alpha: float, pilot: int | None = None
) -> tuple:
    """Every (metric, configuration)'s head/base (grids: rounds x [base, head]) and its
    verdict, Bonferroni over the rows: (rows, the row's two-sided confidence in percent).
    ``pilot``: the first rounds were Stein's pilot; the interval is Stein's (its spread)."""
    from benchlang.stats.equivalence import equivalence, tost_confidence
    from benchlang.stats.round_contrast import round_contrast, round_contrasts
    from benchlang.stats.two_stage import stein_interval

    row_alpha = alpha / max(1, len(grids))
    level = tost_confidence(row_alpha)
    rows = []
    for (metric, config), x in grids.items():
        if pilot is None:
            c = round_contrast(x, (-1.0, 1.0), level)
        else:
            first = round_contrasts(x[:pilot], (-1.0, 1.0))
            rest = round_contrasts(x[pilot:], (-1.0, 1.0))
            c = stein_interval(np.concatenate([first, rest]), first.size, level)
        side = better.get(metric, "lower")
        gate = equivalence(*c.ratio[1:], margin, alpha=row_alpha, better=side)
        rows.append(RevisionRow(metric, config, side, c.ratio, c.rounds, gate.verdict))
    return tuple(rows), level


def pilot_spread(grids: dict) -> np.ndarray:
    """Each row's standard deviation of the within-round log ratio (nan under 2 rounds)."""
    from benchlang.stats.round_contrast import round_contrasts

    out = []
    for x in grids.values():
        c = round_contrasts(x, (-1.0, 1.0))
        out.append(float(c.std(ddof=1)) if c.size >= 2 else math.nan)
    return np.asarray(out)


def _seconds(value: float) -> str:
    from benchlang.report.record import format_duration

    return format_duration(round(value)) if value >= 10 else f"{value:.2g}s"


def sizing_text(size, margin: float, rows: int, per_round: float, max_time, cap_by: str) -> str:
    """What Stein's procedure chose and why, in one sentence."""
    text = (
        f"pilot {size.pilot} rounds ({_seconds(per_round)} a round): contrast sd "
        f"{100 * size.sd:.2g}% (the largest of {rows} rows); {size.required} rounds sized for "
        f"a {100 * margin:.3g}% margin at {100 * size.power:.0f}% power (one-sided "
        f"{100 * size.alpha:.2g}% a row, Stein's two-stage t)"
    )
    if size.capped:
        text += f"; capped by {cap_by} at {size.rounds}"
    return text


def _merge(first: dict, second: dict) -> dict:
    return {k: np.vstack([x, second[k]]) if k in second else x for k, x in first.items()}


def _revision(root: Path, rev: str, sha: str) -> dict:
    subject = git(root, "log", "-1", "--format=%s", sha).stdout.strip()
    return {"ref": rev, "commit": sha, "subject": subject}


def _plan_rounds(design, rounds: int | str | None) -> tuple[int | None, str]:
    """(fixed rounds or None for Stein's two-stage, why)."""
    if isinstance(rounds, int):
        return rounds, "--rounds"
    if rounds is None and design.runs_reason in FIXED_RUNS:
        if design.runs >= 2:
            return design.runs, "the spec's runs"
        return DEFAULT_ROUNDS, f"the spec's runs {design.runs} is below 2"
    return None, "--rounds auto" if rounds == "auto" else "the spec does not fix its runs"


def compare_revisions(
    spec: str | Path,
    base: str,
    head: str | None = None,
    *,
    build_command: str | None = None,
    margin: float = 0.02,
    confidence: float = 95.0,
    keep: str | Path | None = None,
    rounds: int | str | None = None,
    pilot: int = PILOT_ROUNDS,
    max_rounds: int = MAX_ROUNDS,
    max_time: float | None = None,
) -> RevisionCompare:
    """Build ``base`` and ``head`` (default: HEAD) in worktrees, run the spec's benchmarks at
    both interleaved in one session and judge each head/base against ``margin``; the
    repository is left as it was (worktrees removed, HEAD and branch restored), whatever
    happens. ``rounds``: a number, ``"auto"`` (Stein's two-stage sizing: ``pilot`` rounds,
    then the total capped by ``max_rounds`` and ``max_time`` seconds), or None (the spec's
    runs when it fixes them, else auto)."""
    from benchlang.app.spec import compile_spec

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
    experiment = compile_spec(spec).experiment
    fixed, why = _plan_rounds(experiment.design, rounds)
    first_rounds = fixed if fixed is not None else pilot
    alpha = (100.0 - confidence) / 100.0
    rel = spec.parent.relative_to(root)
    state = Path(keep).resolve() if keep else Path(tempfile.mkdtemp(prefix="benchlang-compare-"))
    state.mkdir(parents=True, exist_ok=True)
    stores = [state / "compare.sqlite", state / "compare-2.sqlite"]
    if any(s.exists() for s in stores):
        raise UserError(f"{state} holds a compare store: --keep needs a directory without one")
    trees = state / "trees"
    original = original_head(root)
    size = None
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
        derived = session_experiment(experiment, spec.parent, slots, first_rounds, root, "compare")
        seed = session_seed(experiment.seed, shas["head"], int(shas["base"][:8], 16))
        started = time.monotonic()
        grids = run_session(derived, spec, stores[0], seed, SLOTS, block=True)
        per_round = (time.monotonic() - started) / first_rounds
        if fixed is None:
            from benchlang.stats.two_stage import stein_rounds

            cap, cap_by = max_rounds, f"--max-rounds {max_rounds}"
            if max_time is not None and per_round > 0:
                by_time = int(max_time // per_round)
                if by_time < cap:
                    cap, cap_by = by_time, f"--max-time {_seconds(max_time)}"
            size = stein_rounds(
                pilot_spread(grids),
                pilot,
                math.log1p(margin),
                alpha / max(1, len(grids)),
                POWER,
                cap,
            )
            if size.rounds > pilot:
                more = session_experiment(
                    experiment, spec.parent, slots, size.rounds - pilot, root, "compare"
                )
                grids = _merge(
                    grids, run_session(more, spec, stores[1], (seed + 1) % 2**63, SLOTS, block=True)
                )
    finally:
        restore(root, original, trees)
        if not keep:
            shutil.rmtree(state, ignore_errors=True)
        elif trees.is_dir() and not any(trees.iterdir()):
            trees.rmdir()
    better = {m.name: m.better for m in experiment.metrics}
    rows, level = judge(grids, better, margin, alpha, None if size is None else pilot)
    metrics = {m.name: i for i, m in enumerate(experiment.metrics)}
    benchmarks = {b.name: i for i, b in enumerate(experiment.benchmarks)}
    rows = tuple(
        sorted(
            rows,
            key=lambda r: (
                metrics.get(r.metric, len(metrics)),
                benchmarks.get(r.configuration.split("[", 1)[0], len(benchmarks)),
                r.configuration,
            ),
        )
    )
    missing = [f"{r.configuration} {r.metric}" for r in rows if r.rounds < 2]
    if missing:
        notes.append(
            f"not measured at both revisions in 2 rounds or more (failed trials): "
            f"{', '.join(missing)}; see the trials' errors with --keep DIR and benchlang results"
        )
    sessions = (
        "two sessions (the pilot, then the rest: the interval is the wider of Stein's and the "
        "paired t over every round)"
        if size is not None and size.rounds > pilot
        else "one session"
    )
    order = (
        "both revisions in every round, each configuration's two next to each other, in random "
        f"order, {sessions}; no stopping rule"
    )
    if size is None:
        design = f"{fixed} rounds fixed before the data ({why}); {order}"
        sizing = None
    else:
        design = (
            f"Stein's two-stage design ({why}): "
            f"{sizing_text(size, margin, len(rows), per_round, max_time, cap_by)}; {order}"
        )
        sizing = {
            k: v if not isinstance(v, float) or math.isfinite(v) else None
            for k, v in (attrs.asdict(size) | {"round_seconds": per_round}).items()
        } | {"max_time": max_time}
    method = {
        "design": design,
        "rounds": fixed if size is None else size.rounds,
        "sizing": sizing,
        "df": None if size is None else size.pilot - 1,
        "ratio": (
            "head/base: exp of the mean within-round log ratio, paired t interval"
            if size is None
            else "head/base: exp of the mean within-round log ratio over all rounds, the "
            "wider of the pilot's spread with its t (Stein 1945) and the paired t over all rounds"
        ),
        "margin": margin,
        "confidence": confidence,
        "correction": "bonferroni",
        "rows": len(rows),
        "row_confidence": level,
        "false_worse_per_compare": alpha,
    }
    kept = [str(s) for s in stores if s.exists()] if keep else []
    return RevisionCompare(
        str(spec),
        _revision(root, base, shas["base"]),
        _revision(root, head, shas["head"]),
        rows,
        method,
        kept[0] if kept else None,
        tuple(notes),
        tuple(kept),
    )
