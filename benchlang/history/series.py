"""Writing runs into a history and reading its series back, in commit order (the order runs
were added in, by date): the only SQL of the history besides the schema (history.db)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.errors import UserError
from benchlang.history.db import History
from benchlang.history.points import Point, Run


@attrs.frozen
class Series:
    """One metric x configuration x host class through the history, oldest first."""

    metric: str
    configuration: str
    host_class: str
    unit: str | None
    better: str
    percentile: float
    commits: Sequence[str | None]  # tuples, or a stored copy's columns (history.series_copy)
    dates: Sequence[str]
    run_keys: Sequence[str]
    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    trials: tuple[int, ...]
    independence: Sequence[str]

    @property
    def name(self) -> str:
        host = "" if self.host_class == "unknown" else f" @ {self.host_class}"
        return f"{self.metric} {self.configuration}{host}"

    def __len__(self) -> int:
        return int(self.values.size)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.metric, self.configuration, self.host_class)

    def described(self) -> dict[str, Any]:
        """What the JSON of ``history list`` and ``changes`` says of the series itself."""
        return {
            "metric": self.metric,
            "configuration": self.configuration,
            "host_class": self.host_class,
            "unit": self.unit,
            "better": self.better,
            "points": len(self),
        }

    def head(self, n: int) -> Series:
        """The series' first ``n`` points (the history as it was before a newer point)."""
        cut = {f.name: getattr(self, f.name) for f in attrs.fields(Series)}
        for k in ("commits", "dates", "run_keys", "values", "lower", "upper", "trials"):
            cut[k] = cut[k][:n]
        cut["independence"] = cut["independence"][:n]
        return Series(**cut)


def _null(x: float) -> float | None:
    return x if math.isfinite(x) else None


def add_run(
    h: History,
    run: Run,
    points: Sequence[Point],
    then: Callable[[History, Run, Sequence[Point]], None] | None = None,
) -> bool:
    """Append a run and its points in one transaction; False when the run is already there
    (the same store added twice adds nothing). A run of another experiment is refused.
    ``then`` runs in the same transaction after the points are written (the stored change
    points, history.stored), so both are committed together or not at all."""
    with h.write():
        return _add(h, run, points, then)


def add_runs(
    h: History,
    batch: Sequence[tuple[Run, Sequence[Point]]],
    then: Callable[[History, Run, Sequence[Point]], None] | None = None,
) -> list[bool]:
    """Several runs in one transaction (an import: a refused row writes nothing); ``then``
    once, after the last run written."""
    with h.write():
        added = [_add(h, run, points, None) for run, points in batch]
        last = [(r, p) for (r, p), a in zip(batch, added, strict=True) if a]
        if last and then is not None:
            then(h, *last[-1])
    return added


def _add(
    h: History,
    run: Run,
    points: Sequence[Point],
    then: Callable[[History, Run, Sequence[Point]], None] | None,
) -> bool:
    tracked, there, seq = h.query(
        "SELECT (SELECT value FROM meta WHERE key = 'experiment'), "
        "(SELECT 1 FROM runs WHERE run_key = ?), (SELECT COALESCE(MAX(seq), 0) + 1 FROM runs)",
        (run.run_key,),
    )[0]
    if tracked is not None and tracked != run.experiment:
        raise UserError(
            f"{run.source} holds experiment {run.experiment!r}; history {h.name} tracks "
            f"{tracked!r}",
            "one history per experiment: pass --history with another file or URL",
        )
    if there:
        return False
    return _insert(h, run, points, int(seq), tracked is None, then)


def _insert(
    h: History,
    run: Run,
    points: Sequence[Point],
    seq: int,
    first: bool,
    then: Callable[[History, Run, Sequence[Point]], None] | None,
) -> bool:
    """add_run's writes, batched (one round trip to a PostgreSQL server for the lot, until
    ``then`` reads)."""
    with h.batch():
        if first:
            h.execute("INSERT INTO meta (key, value) VALUES ('experiment', ?)", (run.experiment,))
        h.execute(
            "INSERT INTO runs (run_key, seq, experiment, plan_hash, commit_sha, branch, date, "
            "source, facts, tags) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                run.run_key,
                seq,
                run.experiment,
                run.plan_hash,
                run.commit,
                run.branch,
                run.date,
                run.source,
                json.dumps(dict(run.facts), sort_keys=True),
                json.dumps(dict(run.tags), sort_keys=True),
            ),
        )
        h.executemany(
            "INSERT INTO points (run_key, metric, configuration, host_class, unit, better, "
            "percentile, value, lower, upper, interval_kind, series_kpis, variability, trials, "
            "independence, reasons) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run.run_key,
                    p.metric,
                    p.configuration,
                    p.host_class,
                    p.unit,
                    p.better,
                    p.percentile,
                    _null(p.value),
                    _null(p.lower),
                    _null(p.upper),
                    p.interval_kind,
                    json.dumps([_null(x) for x in p.series_kpis]),
                    _null(p.variability),
                    p.trials,
                    p.independence,
                    json.dumps(list(p.reasons)),
                )
                for p in points
            ],
        )
        if then is not None:
            then(h, run, points)
    return True


def runs(h: History) -> list[dict[str, Any]]:
    """Every run, oldest first, with its point count."""
    rows = h.query(
        "SELECT r.run_key, r.commit_sha, r.branch, r.date, r.source, r.plan_hash, r.tags, "
        "COUNT(p.metric) FROM runs r LEFT JOIN points p ON p.run_key = r.run_key "
        "GROUP BY r.run_key, r.commit_sha, r.branch, r.date, r.source, r.plan_hash, r.tags, "
        "r.seq ORDER BY r.date, r.seq"
    )
    keys = ("run", "commit", "branch", "date", "source", "plan_hash", "tags", "points")
    out = [dict(zip(keys, row, strict=True)) for row in rows]
    for r in out:
        r["tags"] = json.loads(r["tags"])
    return out


def read_series(h: History, key: tuple[str, str, str] | None = None) -> list[Series]:
    """Every series of the history (or the one of ``key``: metric, configuration, host
    class), each oldest first (by date, then the order added)."""
    where = "WHERE p.metric = ? AND p.configuration = ? AND p.host_class = ? " if key else ""
    rows = h.query(
        "SELECT p.metric, p.configuration, p.host_class, p.unit, p.better, p.percentile, "
        "r.commit_sha, r.date, r.run_key, p.value, p.lower, p.upper, p.trials, p.independence "
        f"FROM points p JOIN runs r ON r.run_key = p.run_key {where}"
        "ORDER BY p.metric, p.configuration, p.host_class, r.date, r.seq",
        key or (),
    )
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for row in rows:
        groups.setdefault(row[:3], []).append(row)
    out = []
    for (metric, configuration, klass), g in groups.items():
        last = g[-1]

        def col(i: int, g: list[tuple[Any, ...]] = g) -> np.ndarray:
            return np.array([np.nan if r[i] is None else float(r[i]) for r in g])

        out.append(
            Series(
                metric,
                configuration,
                klass,
                last[3],
                last[4],
                float(last[5]) if last[5] is not None else 50.0,
                tuple(r[6] for r in g),
                tuple(r[7] for r in g),
                tuple(r[8] for r in g),
                col(9),
                col(10),
                col(11),
                tuple(int(r[12]) for r in g),
                tuple(r[13] for r in g),
            )
        )
    return out
