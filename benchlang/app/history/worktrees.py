"""Builds of one spec at several git revisions, each in a worktree of its own, run interleaved
in random order within rounds in ONE session (``bisect``: docs/history.md#bisect; ``compare SPEC
--base REF``: docs/cli.md#compare).

The revision is a factor of the session: each benchmark of the spec runs once per build in
every round, its copy named ``BENCHMARK@SLOT`` and run in that build's worktree. Slot names
have one length (bisect: ``old``, ``mid``, ``new``; compare: ``base``, ``head``), so the
worktrees' paths (``TREES/SLOT``) and each trial's environment (``BENCHLANG_CONFIGURATION``)
have the same size for every build, two of DataMill's hidden factors (de Oliveira et al.,
ICPE 2013, §3: the environment's size and the path move a program's memory layout, Mytkowicz
et al., ASPLOS 2009). The user's checkout is never touched; ``restore`` removes the worktrees
and puts HEAD back, also on Ctrl-C.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from benchlang import model
from benchlang.errors import UserError

if TYPE_CHECKING:
    from benchlang.plan.plan import Plan
    from benchlang.report.data import ExperimentData


def git(repo: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` in ``repo``; a failure is a UserError with git's first line."""
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["failed"])[0]
        raise UserError(f"git {' '.join(args)}: {first}")
    return done


def checkout(root: Path, trees: Path, slot: str, sha: str) -> Path:
    """The worktree of ``slot`` under ``trees`` at ``sha`` (added, or moved there)."""
    path = trees / slot
    if path.exists():
        git(path, "checkout", "--quiet", "--force", "--detach", sha)
        git(path, "clean", "-q", "-f", "-d", "-x")
    else:
        git(root, "worktree", "add", "--quiet", "--force", "--detach", str(path), sha)
    return path


def remove_worktrees(root: Path, trees: Path) -> None:
    """Unregister and delete the worktrees under ``trees``: the repository is left as it was."""
    for path in sorted(trees.iterdir()) if trees.is_dir() else ():
        git(root, "worktree", "remove", "--force", str(path), check=False)
    git(root, "worktree", "prune", check=False)


def build(tree: Path, command: str | None) -> str | None:
    """Run the build command in a worktree; why it failed, or None."""
    if not command:
        return None
    done = subprocess.run(command, shell=True, cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1][:200]
        return f"build failed (exit {done.returncode}){': ' + last if last else ''}"
    return None


def session_experiment(
    experiment: model.Experiment,
    spec_dir: Path,
    trees: dict[str, Path],
    rounds: int,
    root: Path,
    purpose: str = "bisect",
) -> model.Experiment:
    """The spec's experiment with each benchmark copied per build (``NAME@SLOT``, run in the
    build's worktree), ``rounds`` rounds in one series in random order, no stopping rule or
    span (the session is one sitting). The experiment's own hooks run in the ``new`` tree."""
    if experiment.design.layout is not None:
        raise UserError(
            f"{purpose} runs the builds interleaved in rounds; this spec has an A/B layout design",
            f"{purpose} with a spec without a layout (its versions are the builds here)",
        )
    if experiment.hosts.kind != "local":
        raise UserError(
            f"{purpose} builds each revision in a worktree on this machine; the spec runs on "
            f"hosts {experiment.hosts.kind}",
            f"{purpose} with a spec on hosts local",
        )
    fixed = [w for w in (experiment.workdir, *(b.workdir for b in experiment.benchmarks)) if w]
    if any(Path(w).is_absolute() for w in fixed):
        raise UserError(
            "the spec's workdir is an absolute path: every build would run in the same directory",
            'give the workdir relative to the spec (workdir "." runs next to it)',
        )
    rel = spec_dir.resolve().relative_to(root.resolve())

    def where(slot: str, workdir: str | None) -> str:
        base = trees[slot] / rel
        return str(base / workdir) if workdir else str(trees[slot])

    benchmarks = tuple(
        attrs.evolve(
            b, name=f"{b.name}@{slot}", workdir=where(slot, b.workdir or experiment.workdir)
        )
        for b in experiment.benchmarks
        for slot in trees
    )
    design = attrs.evolve(
        experiment.design,
        runs=rounds,
        runs_reason=f"{purpose}: rounds of one session",
        series=1,
        series_reason=f"{purpose}: one session",
        order="random",
        span=None,
        span_reason=None,
    )
    last = list(trees)[-1]
    return attrs.evolve(
        experiment,
        benchmarks=benchmarks,
        design=design,
        stop=None,
        workdir=where(last, experiment.workdir),
        comparisons=(),
        profiles=(),
    )


def blocked(plan: Plan) -> Plan:
    """The plan with each round's trials grouped by the spec's configuration: the builds of one
    configuration run one after the other, the configurations in the order of their first trial
    in the round's seeded permutation and the builds in their order there, so both orders stay
    uniformly random (a randomised complete block design with the configuration as the block
    within the round: Montgomery, *Design and Analysis of Experiments*, 8th ed., §4.1; Perflab's
    blocking, Bakshy & Frachtenberg, WWW 2015, §3). A drift within the round then reaches a
    contrast only over the trials between one configuration's builds (one trial apart), not
    across the whole round."""
    from benchlang.plan.plan import Derived

    names: dict[tuple[str, Any], int] = {}
    for c in plan.configurations:
        names.setdefault((c.benchmark.rsplit("@", 1)[0], c.levels), len(names))
    group = np.array(
        [names[(c.benchmark.rsplit("@", 1)[0], c.levels)] for c in plan.configurations]
    )
    rounds, positions = plan.trial_round, plan.trial_position
    if rounds.size == 0:
        return plan
    width = int(positions.max()) + 1
    cell = np.full((plan.n_rounds, width), -1, dtype=np.int64)
    cell[rounds, positions] = plan.trial_configuration  # a warm-up shares its trial's position
    if np.any(cell < 0):
        return plan
    g = group[cell]
    first = np.full((plan.n_rounds, len(names)), width)
    rows = np.repeat(np.arange(plan.n_rounds), width)
    np.minimum.at(first, (rows, g.reshape(-1)), np.tile(np.arange(width), plan.n_rounds))
    key = np.take_along_axis(first, g, axis=1) * width + np.arange(width)[None, :]
    rank = np.argsort(np.argsort(key, axis=1, kind="stable"), axis=1)
    new_position = rank[rounds, positions].astype(positions.dtype)
    src = np.lexsort((np.arange(rounds.size), new_position, rounds))
    hidden = plan.trial_hidden and {k: [v[i] for i in src] for k, v in plan.trial_hidden.items()}
    derived = tuple(
        Derived(
            "order",
            "blocked",
            "random order of the configurations in every round, the builds of one "
            "configuration next to each other in random order (a block)",
        )
        if d.name == "order"
        else d
        for d in plan.derived
    )
    return attrs.evolve(
        plan,
        trial_round=rounds[src],
        trial_position=new_position[src],
        trial_configuration=plan.trial_configuration[src],
        trial_seed=plan.trial_seed[src],
        trial_phase=None if plan.trial_phase is None else plan.trial_phase[src],
        trial_hidden=hidden or plan.trial_hidden,
        derived=derived,
    )


def run_session(
    experiment: model.Experiment,
    spec: Path,
    store_path: Path,
    seed: int,
    slots: Sequence[str],
    block: bool = False,
) -> dict[tuple[str, str], np.ndarray]:
    """Run the session into a new store; per (metric, configuration of the spec) a rounds x
    builds array of metric values (nan: failed), builds in the experiment's slot order.
    ``block``: the builds of one configuration run next to each other in every round
    (``blocked``)."""
    import asyncio

    from benchlang.app.plan import plan_experiment
    from benchlang.app.system import preflight, record_preflight
    from benchlang.report.data import load_data
    from benchlang.run.executor import Executor
    from benchlang.run.progress import Progress
    from benchlang.run.store import Store

    experiment, backend, plan = plan_experiment(experiment, spec, seed)
    if block:
        plan = blocked(plan)
    checked = preflight(experiment, backend, False)
    with Store(store_path, create=True, write=True) as store:
        store.add_plan(
            plan.hash,
            experiment.name,
            experiment.spec_hash,
            plan.seed,
            plan.json_text(),
            str(spec),
            spec.read_text(encoding="utf-8"),
        )
        record_preflight(store, plan.hash, checked)
        executor = Executor(
            experiment,
            plan,
            backend,
            store,
            Progress(plan.n_trials, 0, quiet=True),
            reap=True,
            spec_dir=str(spec.parent.resolve()),
        )
        summary = asyncio.run(executor.run())
        if summary.interrupted is not None:
            raise KeyboardInterrupt
        data = load_data(store, plan.hash, experiment=experiment)
    return rounds_by_build(data, slots)


def rounds_by_build(
    data: ExperimentData, order: Sequence[str]
) -> dict[tuple[str, str], np.ndarray]:
    """(metric, configuration) -> rounds x slots metric values, the slots in ``order``, the
    configuration named as in the spec (without ``@SLOT``)."""
    table = data.table
    slots_seen: list[str] = []
    keys = []
    for label, bench in zip(table.label.tolist(), table.benchmark.tolist(), strict=True):
        name, slot = str(bench).rsplit("@", 1)
        keys.append((str(label).replace(f"{name}@{slot}", name, 1), slot))
        if slot not in slots_seen:
            slots_seen.append(slot)
    slots = [s for s in order if s in slots_seen]
    round_key = table.series.astype(np.int64) * 1_000_000 + table.round.astype(np.int64)
    rounds, at = np.unique(round_key, return_inverse=True)
    out = {}
    for metric, values in data.metrics.items():
        for config in dict.fromkeys(k for k, _ in keys):
            grid = np.full((rounds.size, len(slots)), np.nan)
            for i, (c, s) in enumerate(keys):
                if c == config:
                    grid[at[i], slots.index(s)] = values.values[i]
            out[(metric, config)] = grid
    return out


def session_builds(benchmarks: Iterable[str], spec_benchmarks: Iterable[str]) -> tuple[str, ...]:
    """The builds of a store's session of builds side by side (``compare``, ``bisect``): its
    trials' benchmarks are the spec's, each copied as ``NAME@SLOT``; () for a run of one
    revision (a spec's own names hold no ``@``)."""
    names = set(spec_benchmarks)
    slots: dict[str, None] = {}
    for bench in benchmarks:
        name, at, slot = str(bench).rpartition("@")
        if not at or name not in names:
            return ()
        slots.setdefault(slot, None)
    return tuple(slots)


def resolve(repo: Path, rev: str, what: str) -> str:
    """The commit ``rev`` names; a shallow clone missing it is said so, with the fix."""
    done = git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", check=False)
    if done.returncode == 0:
        return done.stdout.strip()
    if git(repo, "rev-parse", "--is-shallow-repository", check=False).stdout.strip() == "true":
        raise UserError(
            f"{what} {rev}: not in this clone, which is shallow (its history is cut)",
            "fetch the history: git fetch --unshallow (CI: actions/checkout with fetch-depth: 0)",
        )
    raise UserError(f"{what} {rev}: no such commit in {repo}")


def repository(spec: Path, repo: str | Path | None, purpose: str) -> Path:
    """The top of the git repository holding ``spec`` (or ``repo``); refused when the spec
    is outside it."""
    where = Path(repo) if repo else spec.parent
    top = git(where, "rev-parse", "--show-toplevel", check=False)
    if top.returncode != 0:
        raise UserError(f"{where} is not inside a git repository", "pass --repo DIR")
    root = Path(top.stdout.strip()).resolve()
    if not spec.is_relative_to(root):
        raise UserError(f"{spec} is not inside the repository {root}", f"{purpose} a spec it holds")
    return root


def original_head(root: Path) -> str:
    """The branch checked out (or the commit, detached): what ``restore`` puts back."""
    head = git(root, "symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip()
    return head or git(root, "rev-parse", "HEAD").stdout.strip()


def restore(
    root: Path, original: str, trees: Path, first: Callable[[], object] | None = None
) -> None:
    """Leave the repository as it was: ``first`` (e.g. ``git bisect reset``), the same
    checkout, no worktree of ours. A second Ctrl-C does not interrupt this."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals are not ours to handle
        previous = None
    try:
        if first is not None:
            first()
        if original_head(root) != original:
            git(root, "checkout", "--quiet", "--force", original, check=False)
        remove_worktrees(root, trees)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def session_seed(seed: int, commit: str, look: int) -> int:
    """A seed of its own per session (the order of the rounds differs): from the spec's
    seed, a commit (bisect: the step's; compare: the head's) and the look."""
    return (seed * 1_000_003 + int(commit[:12], 16) * 31 + look) % (2**63)
