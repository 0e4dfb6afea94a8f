"""The history use cases (docs/history.md): add stores, import another tool's series, list,
change points, the CI gate and the dashboard, over one history (SQLite or PostgreSQL)."""

from __future__ import annotations

from benchlang.app import blas_threads  # noqa: F401  (before numpy: see its docstring)

# isort: split

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from benchlang.app.history.kept import kept_points, run_end
from benchlang.errors import UserError
from benchlang.history.db import History, is_postgres
from benchlang.history.points import Point, Run, points_of, run_facts, run_key
from benchlang.history.series import Series, add_run, read_series, runs
from benchlang.history.stored import store_changes, stored_changes
from benchlang.history.verdicts import SeriesChanges, changes
from benchlang.report.atomic import write_atomic

if TYPE_CHECKING:
    from benchlang.history.gate import SeriesCheck

DEFAULT_NAME = "benchlang-history.sqlite"
"""Every ``history`` command's history without ``--history``: this file in the current
directory."""


@attrs.frozen
class Added:
    source: str
    run: str
    commit: str | None
    points: int
    added: bool


def history_target(history: str | None) -> str:
    """``--history`` as given, else ``benchlang-history.sqlite`` in the current directory
    (one default for every ``history`` command)."""
    return history or DEFAULT_NAME


def open_history(target: str, *, create: bool = False, timeout: float = 30.0) -> History:
    if not is_postgres(target) and "://" in target:
        raise UserError(
            f"--history {target!r}: not a file and not a postgresql:// URL",
            "SQLite: a path; PostgreSQL: postgresql://user@host:port/database",
        )
    return History(target, create=create, timeout=timeout)


def _git(args: Sequence[str], where: Path) -> str | None:
    import subprocess  # add and --since only

    try:
        done = subprocess.run(
            ["git", *args], cwd=where, capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_position(where: Path) -> tuple[str | None, str | None]:
    """The commit checked out around ``where`` and its branch (None outside a repository)."""
    folder = where if where.is_dir() else where.parent
    if not folder.is_dir():
        return None, None
    commit = _git(["rev-parse", "HEAD"], folder)
    branch = _git(["rev-parse", "--abbrev-ref", "HEAD"], folder) if commit else None
    return commit, (None if branch == "HEAD" else branch)


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat(timespec="seconds")


def _normal_date(text: str) -> str:
    try:
        when = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise UserError(
            f"--date {text!r} is not an ISO-8601 date", "e.g. 2026-11-24T18:00Z"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return when.astimezone(dt.UTC).isoformat(timespec="seconds")


def store_date(path: Path, plan_hash: str) -> str:
    """The date ``history add`` records for a store's run (ISO 8601, UTC)."""
    return _iso(_store_end(path, plan_hash))


def _store_end(path: Path, plan_hash: str) -> float:
    """When the run ended: its last trial's end, else the store file's modification time."""
    from benchlang.run.store import Store

    with Store(path) as store:
        ended = run_end(store.connection, plan_hash)
    return path.stat().st_mtime if ended is None else ended


def _store_points(store: str | Path) -> tuple[Run, list[Point]]:
    """The run a store adds and its points (``_read_store``)."""
    run, points, _ = _read_store(store)
    return run, points


def _read_store(store: str | Path) -> tuple[Run, list[Point], str | None]:
    """The run a store adds, its points and its spec's path as recorded: the points its run
    kept (app.history.kept) when they are current, else computed from its trials with its
    spec (compiled from the store's text)."""
    path = Path(store)
    if not path.is_file():
        raise UserError(f"no store at {path}")
    kept = kept_points(path)
    if kept is not None:
        run = Run(
            run_key(kept.plan_hash, kept.points),
            kept.experiment,
            kept.plan_hash,
            None,
            None,
            _iso(path.stat().st_mtime if kept.ended is None else kept.ended),
            str(path),
            kept.facts,
            {},
        )
        return run, kept.points, kept.spec_path
    from benchlang.app.analysis import no_values
    from benchlang.app.history.worktrees import session_builds
    from benchlang.app.stores import load_store
    from benchlang.report.analysis import analyze

    data = load_store(path, every_measure=False)
    spec_names = (b.name for b in data.experiment.benchmarks)
    builds = session_builds(data.table.benchmark.tolist(), spec_names)
    if builds:
        raise UserError(
            f"{path}: a session of builds side by side ({'/'.join(builds)}: compare or bisect), "
            "not a run of one commit: history add takes a run of one revision",
            "on main: benchlang run SPEC --store main.sqlite, then history add main.sqlite",
        )
    if not data.experiment.kpis:
        raise UserError(
            f"{path}: the spec declares no kpi, so there is nothing to track",
            "add e.g.: kpi time { percentile 50 confidence 95% }",
        )
    kpis = analyze(data)  # the KPIs alone: a history keeps no headline
    if not kpis:
        raise UserError(no_values(data))
    points = points_of(data, kpis)
    plan = data.plan
    run = Run(
        run_key(plan.plan_hash, points),
        data.experiment.name,
        plan.plan_hash,
        None,
        None,
        _iso(_store_end(path, plan.plan_hash)),
        str(path),
        run_facts(data),
        {},
    )
    return run, points, plan.spec_path


def add_stores(
    stores: Sequence[str | Path],
    history: str | None = None,
    *,
    commit: str | None = None,
    no_commit: bool = False,
    branch: str | None = None,
    date: str | None = None,
    tags: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> tuple[str, list[Added]]:
    """Each store's points into the history (created if needed); the target and what was
    added (a store already there adds nothing). Without ``commit``, each run's commit is the
    git HEAD around its spec (``spec_of``); a run whose spec is in no repository is refused
    unless ``no_commit``."""
    if commit and no_commit:
        raise UserError("--commit and --no-commit: choose one")
    read = []
    for store in stores:  # every store read and placed before anything is written
        run, points, recorded = _read_store(store)
        found_commit = found_branch = None
        if commit is None:
            spec = spec_of(store, recorded)
            if spec is not None:
                found_commit, found_branch = git_position(spec.resolve())
            if found_commit is None and not no_commit:
                raise UserError(
                    f"{store}: no commit for this run: "
                    + (
                        f"its spec {spec} is in no git repository"
                        if spec is not None
                        else f"its spec {recorded!r} is not found (as recorded, nor "
                        "from here, nor from the store's folder)"
                    ),
                    "pass --commit SHA, or --no-commit to add it without one",
                )
        run = attrs.evolve(
            run,
            commit=commit or found_commit,
            branch=branch or found_branch,
            date=_normal_date(date) if date else run.date,
            tags=dict(tags or {}),
        )
        read.append((run, points))
    target = history_target(history)
    out = []
    with open_history(target, create=True, timeout=timeout) as h:
        for run, points in read:
            added = add_run(h, run, points, then=store_changes)
            out.append(Added(run.source, run.run_key, run.commit, len(points), added))
    return target, out


def spec_of(store: str | Path, recorded: str | None) -> Path | None:
    """The spec the store's run was made from (``recorded``: its path as the store keeps it),
    where it still is: as recorded when absolute; a relative one (relative to where ``run``
    started, which the store does not keep) from the current directory, else from the
    store's folder; None when not found."""
    if not recorded:
        return None
    path = Path(recorded)
    if path.is_absolute():
        return path if path.is_file() else None
    for base in (Path.cwd(), Path(store).resolve().parent):
        if (base / path).is_file():
            return base / path
    return None


def import_csv(
    path: str | Path,
    history: str | None = None,
    *,
    experiment: str | None = None,
    time_column: str = "time",
    commit_column: str = "commit",
    higher_is_better: Sequence[str] = (),
    timeout: float = 30.0,
) -> tuple[str, list[Added]]:
    """Series from Apache Otava's CSV layout (app.history.imports), one transaction."""
    from benchlang.app.history.imports import import_rows, read_otava_csv

    read = read_otava_csv(
        path,
        experiment=experiment,
        time_column=time_column,
        commit_column=commit_column,
        higher_is_better=higher_is_better,
    )
    target = history_target(history)
    with open_history(target, create=True, timeout=timeout) as h:
        added = import_rows(h, read)
    return target, [
        Added(str(path), r.run_key, r.commit, len(p), a)
        for (r, p), a in zip(read, added, strict=True)
    ]


def list_history(history: str | None = None) -> dict[str, Any]:
    """The history's runs and series, for ``history list``."""
    from benchlang.history.acks import read_acks

    with open_history(history_target(history)) as h:
        all_runs = runs(h)
        series = read_series(h)
        acks = read_acks(h)
        name = h.name
    return {
        "history": name,
        "runs": all_runs,
        "acknowledged": [a.to_dict() for a in acks],
        "series": [s.described() | {"first": s.dates[0], "last": s.dates[-1]} for s in series],
    }


def _since_index(series: list[Series], ref: str, repo: Path) -> str:
    """The date of REF's run in the history: REF is a commit prefix of the history, or a
    name git resolves in ``repo``."""
    for s in series:
        for commit, date in zip(s.commits, s.dates, strict=True):
            if commit and len(ref) >= 4 and commit.startswith(ref):
                return date
    full = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo)
    if full is None:
        shallow = _git(["rev-parse", "--is-shallow-repository"], repo) == "true"
        if shallow:
            raise UserError(
                f"--since {ref}: not in this clone, which is shallow (its history is cut)",
                "fetch the history: git fetch --unshallow (CI: actions/checkout with fetch-depth: 0)",
            )
        raise UserError(f"--since {ref}: no such commit in the history or in {repo}")
    for s in series:
        for commit, date in zip(s.commits, s.dates, strict=True):
            if commit == full:
                return date
    raise UserError(f"--since {ref}: commit {full[:12]} has no run in the history")


def history_changes(
    history: str | None = None,
    *,
    since: str | None = None,
    repo: str | Path = ".",
    alpha: float = 0.05,
    confidence: float = 95.0,
) -> list[SeriesChanges]:
    """Every series' change points (at or after ``since``), regressions first: those the
    history keeps when they are current (history.stored), else found anew."""
    with open_history(history_target(history)) as h:
        stored = stored_changes(h, alpha, confidence)
        series = [f.series for f in stored] if stored is not None else read_series(h)
    start = _since_index(series, since, Path(repo)) if since else None
    out = []
    for i, s in enumerate(series):
        found = stored[i] if stored is not None else changes(s, alpha=alpha, confidence=confidence)
        if start is not None:
            kept = tuple(c for c in found.changes if c.date_after >= start)
            noise = tuple(c for c in found.spread if c.date_after >= start)
            found = attrs.evolve(found, changes=kept, spread=noise)
        out.append(found)
    return sorted(out, key=lambda c: (not c.regressions, c.series.name))


def all_changes(h: History, alpha: float, confidence: float) -> list[SeriesChanges]:
    """Every series' change points: the stored ones when current, else found anew."""
    stored = stored_changes(h, alpha, confidence)
    if stored is not None:
        return stored
    return [changes(s, alpha=alpha, confidence=confidence) for s in read_series(h)]


def history_check(
    history: str | None = None,
    margin: float = 0.02,
    *,
    alpha: float = 0.05,
    confidence: float = 95.0,
) -> list[SeriesCheck]:
    """The gate (history.gate): the newest run of every series in it as one family, and
    every regression still open."""
    from benchlang.history.acks import read_acks
    from benchlang.history.gate import gate
    from benchlang.history.stored import stored_before

    with open_history(history_target(history)) as h:
        found = all_changes(h, alpha, confidence)
        before = stored_before(h, alpha, confidence)
        acks = read_acks(h)
    if not found:
        raise UserError("the history has no series yet", "benchlang history add STORE")
    newest = max(f.series.dates[-1] for f in found)
    current = [f for f in found if f.series.dates[-1] == newest]
    return gate(current, acks, margin, alpha=alpha, confidence=confidence, before=before)


def history_report(
    out: str | Path,
    history: str | None = None,
    *,
    alpha: float = 0.05,
    confidence: float = 95.0,
) -> Path:
    """The dashboard: one self-contained HTML page written to ``out``."""
    from benchlang.history.dashboard import dashboard

    found = history_changes(history, alpha=alpha, confidence=confidence)
    if not found:
        raise UserError("the history has no series yet", "benchlang history add STORE")
    from benchlang.history.acks import read_acks

    with open_history(history_target(history)) as h:
        name = h.name
        acks = read_acks(h)
    page = dashboard(found, name, acks)
    path = Path(out)
    write_atomic(path, page)
    return path
