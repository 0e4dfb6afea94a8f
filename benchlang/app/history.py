"""The history use cases (docs/history.md): add stores, import another tool's series, list,
change points, the CI gate and the dashboard, over one history (SQLite or PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import math
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from benchlang.errors import UserError
from benchlang.history.db import History, is_postgres
from benchlang.history.points import Point, Run, points_of, run_facts, run_key
from benchlang.history.series import Series, add_run, read_series, runs
from benchlang.history.stored import store_changes, stored_changes
from benchlang.history.verdicts import SeriesChanges, SeriesCheck, changes, check

DEFAULT_NAME = "benchlang-history.sqlite"


@attrs.frozen
class Added:
    source: str
    run: str
    commit: str | None
    points: int
    added: bool


def history_target(history: str | None, spec_path: str | Path | None = None) -> str:
    """``--history`` as given, else ``benchlang-history.sqlite`` next to the spec (or here)."""
    if history:
        return history
    folder = Path(spec_path).parent if spec_path else Path()
    return str(folder / DEFAULT_NAME)


def open_history(target: str, *, create: bool = False, timeout: float = 30.0) -> History:
    if not is_postgres(target) and "://" in target:
        raise UserError(
            f"--history {target!r}: not a file and not a postgresql:// URL",
            "SQLite: a path; PostgreSQL: postgresql://user@host:port/database",
        )
    return History(target, create=create, timeout=timeout)


def _git(args: Sequence[str], where: Path) -> str | None:
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


def _store_end(path: Path, plan_hash: str) -> float:
    """When the run ended: its last trial's end, else the store file's modification time."""
    from benchlang.run.store import Store

    with Store(path) as store:
        try:
            row = store.db.execute(
                "SELECT MAX(ended) FROM trials WHERE plan_hash = ?", (plan_hash,)
            ).fetchone()
        except Exception:
            row = None
    if row and row[0] is not None and math.isfinite(row[0]):
        return float(row[0])
    return path.stat().st_mtime


def _store_points(store: str | Path) -> tuple[Run, list[Point]]:
    from benchlang.app.analysis import kpis_and_headline, no_values
    from benchlang.app.stores import load_store

    path = Path(store)
    if not path.is_file():
        raise UserError(f"no store at {path}")
    data = load_store(path, every_measure=False)
    if not data.experiment.kpis:
        raise UserError(
            f"{path}: the spec declares no kpi, so there is nothing to track",
            "add e.g.: kpi time { percentile 50 confidence 95% }",
        )
    kpis, _ = kpis_and_headline(data)
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
    return run, points


def add_stores(
    stores: Sequence[str | Path],
    history: str | None = None,
    *,
    commit: str | None = None,
    branch: str | None = None,
    date: str | None = None,
    tags: Mapping[str, str] | None = None,
    timeout: float = 30.0,
) -> tuple[str, list[Added]]:
    """Each store's points into the history (created if needed); the target and what was
    added (a store already there adds nothing)."""
    read = [_store_points(s) for s in stores]  # every store read before anything is written
    target = history_target(history, _spec_of(stores[0]))
    out = []
    with open_history(target, create=True, timeout=timeout) as h:
        for run, points in read:
            found_commit = found_branch = None
            if commit is None:
                where = Path(_spec_of(run.source)).resolve()
                found_commit, found_branch = git_position(where)
            run = attrs.evolve(
                run,
                commit=commit or found_commit,
                branch=branch or found_branch,
                date=_normal_date(date) if date else run.date,
                tags=dict(tags or {}),
            )
            added = add_run(h, run, points, then=store_changes)
            out.append(Added(run.source, run.run_key, run.commit, len(points), added))
    return target, out


def _spec_of(store: str | Path) -> str:
    """The spec the store's run was made from when it is still there (its path as recorded,
    which may be relative to where the run started), else the store itself: where to look for
    the git repository and the default history."""
    from benchlang.run.store import Store

    with Store(store) as s:
        recorded = s.plan().spec_path
    return recorded if recorded and Path(recorded).is_file() else str(store)


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
    """Series from Apache Otava's CSV layout: a time column, an optional commit column and
    one numeric column per metric; each row a run (no interval: such points weigh least)."""
    from benchlang.csvrows import read_table

    table = read_table(path, header=True)
    t = table.index(time_column)
    c = table.names.index(commit_column) if commit_column in table.names else None
    metrics = [n for n in table.numeric_names() if table.names.index(n) not in (t, c)]
    if not metrics:
        raise UserError(f"{path}: no numeric metric column besides {time_column!r}")
    unknown = sorted(set(higher_is_better) - set(metrics))
    if unknown:
        raise UserError(f"--higher-is-better {', '.join(unknown)}: not a column of {path}")
    name = experiment or Path(path).stem
    target = history_target(history)
    out = []
    with open_history(target, create=True, timeout=timeout) as h:
        for row in table.rows:
            cells = {n: row[i] if i < len(row) else "" for i, n in enumerate(table.names)}
            points = []
            for m in metrics:
                text = cells[m].strip()
                value = float(text) if text else math.nan
                better = "higher" if m in higher_is_better else "lower"
                points.append(
                    Point(
                        m,
                        name,
                        "unknown",
                        None,
                        better,
                        50.0,
                        value,
                        math.nan,
                        math.nan,
                        "none",
                        (),
                        math.nan,
                        1,
                        "not tested",
                    )
                )
            commit = cells[table.names[c]].strip() or None if c is not None else None
            date = _normal_date(cells[table.names[t]])
            key = run_key(None, points, f"{name} {date} {commit}")
            run = Run(key, name, None, commit, None, date, str(path), {}, {})
            added = add_run(h, run, points, then=store_changes)
            out.append(Added(str(path), key, commit, len(points), added))
    return target, out


def list_history(history: str | None = None) -> dict:
    """The history's runs and series, for ``history list``."""
    with open_history(history_target(history)) as h:
        all_runs = runs(h)
        series = read_series(h)
        name = h.name
    return {
        "history": name,
        "runs": all_runs,
        "series": [
            {
                "metric": s.metric,
                "configuration": s.configuration,
                "host_class": s.host_class,
                "unit": s.unit,
                "better": s.better,
                "points": len(s),
                "first": s.dates[0],
                "last": s.dates[-1],
            }
            for s in series
        ],
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


def history_check(
    history: str | None = None,
    margin: float = 0.02,
    *,
    alpha: float = 0.05,
    confidence: float = 95.0,
) -> list[SeriesCheck]:
    """The gate: the newest point of every series against the history before it."""
    with open_history(history_target(history)) as h:
        series = read_series(h)
    if not series:
        raise UserError("the history has no series yet", "benchlang history add STORE")
    newest = max(d for s in series for d in s.dates)
    judged = [check(s, margin, alpha=alpha, confidence=confidence) for s in series]
    current = [c for c in judged if c.series.dates[-1] == newest]
    return sorted(current, key=lambda c: (c.verdict != "worse", c.series.name))


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
    with open_history(history_target(history)) as h:
        name = h.name
    page = dashboard(found, name)
    path = Path(out)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return path
