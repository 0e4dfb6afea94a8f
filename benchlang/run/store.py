"""The store: one SQLite file (WAL) holding plans, trials, measures and run metadata.

Each finished trial is written in its own transaction, committed before the next trial
starts. With WAL and synchronous=NORMAL a committed trial survives the process being
killed at any instant; an operating-system crash may roll back the last few commits,
and ``--resume`` then runs exactly those trials again. Schema: docs/store.md.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from benchlang.errors import UserError

SCHEMA_VERSION = 2
TAIL_BYTES = 8192

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plans (
    plan_hash TEXT PRIMARY KEY,
    experiment TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    spec_path TEXT,
    spec_text TEXT,
    seed INTEGER NOT NULL,
    plan_json TEXT NOT NULL,
    created REAL NOT NULL,
    run_started REAL
);
CREATE TABLE IF NOT EXISTS trials (
    plan_hash TEXT NOT NULL,
    trial INTEGER NOT NULL,
    series INTEGER NOT NULL,
    round INTEGER NOT NULL,
    position INTEGER NOT NULL,
    host TEXT NOT NULL,
    configuration INTEGER NOT NULL,
    label TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    levels TEXT NOT NULL,
    order_kind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    reason TEXT,
    exit_status INTEGER,
    timed_out INTEGER NOT NULL DEFAULT 0,
    started REAL,
    ended REAL,
    attempts INTEGER NOT NULL DEFAULT 1,
    stdout_tail BLOB,
    stderr_tail BLOB,
    phase TEXT NOT NULL DEFAULT 'measured' CHECK (phase IN ('measured', 'warmup', 'cooldown')),
    PRIMARY KEY (plan_hash, trial)
);
CREATE TABLE IF NOT EXISTS measures (
    plan_hash TEXT NOT NULL,
    trial INTEGER NOT NULL,
    name TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (plan_hash, trial, name)
);
CREATE TABLE IF NOT EXISTS series_values (
    plan_hash TEXT NOT NULL,
    trial INTEGER NOT NULL,
    name TEXT NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (plan_hash, trial, name)
);
CREATE TABLE IF NOT EXISTS rounds (
    plan_hash TEXT NOT NULL,
    round INTEGER NOT NULL,
    host TEXT NOT NULL,
    order_kind TEXT NOT NULL,
    permutation TEXT NOT NULL,
    started REAL,
    ended REAL,
    reset_status TEXT,
    PRIMARY KEY (plan_hash, round)
);
CREATE TABLE IF NOT EXISTS hosts (
    plan_hash TEXT NOT NULL,
    host TEXT NOT NULL,
    facts TEXT NOT NULL,
    recorded REAL NOT NULL,
    PRIMARY KEY (plan_hash, host)
);
CREATE TABLE IF NOT EXISTS stops (
    plan_hash TEXT NOT NULL,
    series INTEGER NOT NULL,
    configuration INTEGER NOT NULL,
    after_trials INTEGER NOT NULL,
    action TEXT NOT NULL,
    rule TEXT NOT NULL,
    detected_class TEXT,
    reason TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (plan_hash, series, configuration)
);
CREATE TABLE IF NOT EXISTS events (
    plan_hash TEXT NOT NULL,
    at REAL NOT NULL,
    host TEXT,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
"""


@attrs.frozen
class TrialRecord:
    """One finished trial as it goes into the store."""

    trial: int
    series: int
    round: int
    position: int
    host: str
    configuration: int
    label: str
    benchmark: str
    levels: Mapping[str, Any]
    order_kind: str
    status: str
    reason: str | None
    exit_status: int | None
    timed_out: bool
    started: float
    ended: float
    attempts: int
    stdout_tail: bytes
    stderr_tail: bytes
    measures: Mapping[str, float]
    series_values: Mapping[str, np.ndarray]
    phase: str = "measured"


@attrs.frozen
class StoredPlan:
    plan_hash: str
    experiment: str
    spec_hash: str
    spec_path: str | None
    spec_text: str | None
    seed: int
    plan_json: str
    run_started: float | None


@attrs.frozen
class TrialTable:
    """Trials of one plan, column-wise, with scalar measures as float arrays (nan = missing)."""

    trial: np.ndarray
    series: np.ndarray
    round: np.ndarray
    position: np.ndarray
    host: np.ndarray
    configuration: np.ndarray
    label: np.ndarray
    benchmark: np.ndarray
    levels: tuple[dict[str, Any], ...]
    order_kind: np.ndarray
    ok: np.ndarray
    reason: np.ndarray
    measures: dict[str, np.ndarray]
    phase: np.ndarray

    def __len__(self) -> int:
        return int(self.trial.size)

    @property
    def measured(self) -> np.ndarray:
        """Trials that count in analyses (not an A/B layout's warm-up or cool-down)."""
        return self.phase == "measured"

    def select(self, mask: np.ndarray) -> TrialTable:
        """The trials where ``mask`` is true, every column alike."""
        picked = np.flatnonzero(mask)
        columns = {f.name: getattr(self, f.name) for f in attrs.fields(TrialTable)}
        out = {k: v[picked] for k, v in columns.items() if isinstance(v, np.ndarray)}
        out["levels"] = tuple(self.levels[i] for i in picked.tolist())
        out["measures"] = {k: v[picked] for k, v in self.measures.items()}
        return TrialTable(**out)


def tail(data: bytes, limit: int = TAIL_BYTES) -> bytes:
    return data[-limit:] if len(data) > limit else data


class Store:
    """A benchlang results file. Use as a context manager; one writer at a time."""

    def __init__(self, path: str | Path, *, create: bool = False) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise UserError(
                f"no store at {self.path}",
                "run an experiment first: benchlang run SPEC --store PATH",
            )
        if create and not self.path.parent.is_dir():
            raise UserError(f"cannot create the store {self.path}: no directory {self.path.parent}")
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(_SCHEMA)
            self._check_version()
        except sqlite3.DatabaseError as err:
            raise UserError(f"{self.path} is not a benchlang store: {err}") from None

    def _check_version(self) -> None:
        row = self.db.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        if row is None:
            self.db.execute(
                "INSERT INTO meta(key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )
        elif int(row[0]) == 1:
            self._upgrade_from_1()
        elif int(row[0]) != SCHEMA_VERSION:
            raise UserError(
                f"{self.path} has store schema {row[0]}; this benchlang reads schema {SCHEMA_VERSION}"
            )

    def _upgrade_from_1(self) -> None:
        """Schema 1 had no trial phase: every trial was measured."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(
                "ALTER TABLE trials ADD COLUMN phase TEXT NOT NULL DEFAULT 'measured' CHECK (phase IN ('measured', 'warmup', 'cooldown'))"
            )
            self.db.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.db.close()

    def add_plan(
        self,
        plan_hash: str,
        experiment: str,
        spec_hash: str,
        seed: int,
        plan_json: str,
        spec_path: str | None = None,
        spec_text: str | None = None,
    ) -> None:
        if not -(2**63) <= seed < 2**63:
            raise UserError(
                f"the seed {seed} does not fit the store (a 64-bit integer)",
                "use a seed below 2**63",
            )
        self.db.execute(
            "INSERT OR IGNORE INTO plans(plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, created) VALUES (?,?,?,?,?,?,?,?)",
            (plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, time.time()),
        )

    def mark_run_started(self, plan_hash: str) -> float:
        """The wall-clock origin of a run (kept across resumes, for series spread over a span)."""
        self.db.execute(
            "UPDATE plans SET run_started = ? WHERE plan_hash = ? AND run_started IS NULL",
            (time.time(), plan_hash),
        )
        return float(
            self.db.execute(
                "SELECT run_started FROM plans WHERE plan_hash = ?", (plan_hash,)
            ).fetchone()[0]
        )

    def plans(self) -> list[StoredPlan]:
        rows = self.db.execute(
            "SELECT plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, run_started FROM plans ORDER BY created"
        ).fetchall()
        return [StoredPlan(*row) for row in rows]

    def plan(self, plan_hash: str | None = None) -> StoredPlan:
        """The named plan, or the only/latest one when none is named."""
        plans = self.plans()
        if not plans:
            raise UserError(f"{self.path} holds no experiment yet")
        if plan_hash is None:
            return plans[-1]
        for p in plans:
            if p.plan_hash.removeprefix("sha256:").startswith(plan_hash.removeprefix("sha256:")):
                return p
        raise UserError(
            f"{self.path} holds no plan {plan_hash}",
            f"plans here: {', '.join(p.plan_hash[:19] for p in plans)}; if the spec or its seed changed since the run, omit SPEC (latest plan) or pass --plan",
        )

    def finished_trials(self, plan_hash: str) -> set[int]:
        return {
            row[0]
            for row in self.db.execute("SELECT trial FROM trials WHERE plan_hash = ?", (plan_hash,))
        }

    def record_trial(self, plan_hash: str, record: TrialRecord) -> None:
        """Write one trial with its measures and series in a single committed transaction."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "INSERT INTO trials VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    plan_hash,
                    record.trial,
                    record.series,
                    record.round,
                    record.position,
                    record.host,
                    record.configuration,
                    record.label,
                    record.benchmark,
                    json.dumps(dict(record.levels), sort_keys=True),
                    record.order_kind,
                    record.status,
                    record.reason,
                    record.exit_status,
                    int(record.timed_out),
                    record.started,
                    record.ended,
                    record.attempts,
                    tail(record.stdout_tail),
                    tail(record.stderr_tail),
                    record.phase,
                ),
            )
            if record.measures:
                db.executemany(
                    "INSERT INTO measures VALUES (?,?,?,?)",
                    [(plan_hash, record.trial, k, float(v)) for k, v in record.measures.items()],
                )
            if record.series_values:
                db.executemany(
                    "INSERT INTO series_values VALUES (?,?,?,?)",
                    [
                        (plan_hash, record.trial, k, np.asarray(v, dtype="<f8").tobytes())
                        for k, v in record.series_values.items()
                    ],
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def record_round(
        self,
        plan_hash: str,
        round_index: int,
        host: str,
        order_kind: str,
        permutation: Iterable[int],
        started: float,
        ended: float | None,
        reset_status: str,
    ) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO rounds VALUES (?,?,?,?,?,?,?,?)",
            (
                plan_hash,
                round_index,
                host,
                order_kind,
                json.dumps(list(permutation)),
                started,
                ended,
                reset_status,
            ),
        )

    def record_host(self, plan_hash: str, host: str, facts: Mapping[str, str]) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO hosts VALUES (?,?,?,?)",
            (plan_hash, host, json.dumps(dict(facts), sort_keys=True), time.time()),
        )

    def record_event(
        self, plan_hash: str, kind: str, message: str, host: str | None = None
    ) -> None:
        self.db.execute(
            "INSERT INTO events VALUES (?,?,?,?,?)", (plan_hash, time.time(), host, kind, message)
        )

    def record_stop(
        self,
        plan_hash: str,
        series: int,
        configuration: int,
        after_trials: int,
        action: str,
        rule: str,
        detected_class: str | None,
        reason: str,
    ) -> None:
        """A stopping rule ended a configuration's trials in a series (issue: stopping rules)."""
        self.db.execute(
            "INSERT OR REPLACE INTO stops VALUES (?,?,?,?,?,?,?,?,?)",
            (
                plan_hash,
                series,
                configuration,
                after_trials,
                action,
                rule,
                detected_class,
                reason,
                time.time(),
            ),
        )

    def stops(self, plan_hash: str) -> list[tuple[int, int, int, str, str, str | None, str]]:
        """(series, configuration, after_trials, action, rule, detected_class, reason) per stop."""
        return self.db.execute(
            "SELECT series, configuration, after_trials, action, rule, detected_class, reason FROM stops WHERE plan_hash = ? ORDER BY series, configuration",
            (plan_hash,),
        ).fetchall()

    def events(self, plan_hash: str) -> list[tuple[float, str | None, str, str]]:
        return self.db.execute(
            "SELECT at, host, kind, message FROM events WHERE plan_hash = ? ORDER BY at",
            (plan_hash,),
        ).fetchall()

    def host_facts(self, plan_hash: str) -> dict[str, dict[str, str]]:
        rows = self.db.execute("SELECT host, facts FROM hosts WHERE plan_hash = ?", (plan_hash,))
        return {host: json.loads(facts) for host, facts in rows}

    def trial_table(self, plan_hash: str) -> TrialTable:
        rows = self.db.execute(
            "SELECT trial, series, round, position, host, configuration, label, benchmark, levels, order_kind, status, reason, phase "
            "FROM trials WHERE plan_hash = ? ORDER BY trial",
            (plan_hash,),
        ).fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [()] * 13
        trial = np.asarray(columns[0], dtype=np.int64)
        measures: dict[str, np.ndarray] = {}
        index = {t: i for i, t in enumerate(trial.tolist())}
        for name, t, value in self.db.execute(
            "SELECT name, trial, value FROM measures WHERE plan_hash = ?", (plan_hash,)
        ):
            column = measures.get(name)
            if column is None:
                column = measures[name] = np.full(trial.size, np.nan)
            if t in index and value is not None:
                column[index[t]] = value
        return TrialTable(
            trial=trial,
            series=np.asarray(columns[1], dtype=np.int64),
            round=np.asarray(columns[2], dtype=np.int64),
            position=np.asarray(columns[3], dtype=np.int64),
            host=np.asarray(columns[4], dtype=object),
            configuration=np.asarray(columns[5], dtype=np.int64),
            label=np.asarray(columns[6], dtype=object),
            benchmark=np.asarray(columns[7], dtype=object),
            levels=tuple(json.loads(x) for x in columns[8]),
            order_kind=np.asarray(columns[9], dtype=object),
            ok=np.asarray([s == "ok" for s in columns[10]], dtype=bool),
            reason=np.asarray(columns[11], dtype=object),
            measures=measures,
            phase=np.asarray(columns[12], dtype=object),
        )

    def series_values(self, plan_hash: str, name: str) -> dict[int, np.ndarray]:
        rows = self.db.execute(
            "SELECT trial, data FROM series_values WHERE plan_hash = ? AND name = ?",
            (plan_hash, name),
        )
        return {t: np.frombuffer(data, dtype="<f8") for t, data in rows}

    def failed_trials(
        self, plan_hash: str
    ) -> Iterator[tuple[int, str, str, int | None, bytes, bytes]]:
        yield from self.db.execute(
            "SELECT trial, label, reason, exit_status, stdout_tail, stderr_tail FROM trials WHERE plan_hash = ? AND status = 'failed' ORDER BY trial",
            (plan_hash,),
        )
