"""The store's tables (docs/store.md) and its schema version; ``legacy`` keeps the DDL of every
earlier version (for ``benchlang store migrate`` and its tests)."""

from __future__ import annotations

SCHEMA_VERSION = 7
TAIL_BYTES = 8192

PHASES = "CHECK (phase IN ('measured', 'warmup', 'cooldown'))"

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS plans (
    id INTEGER PRIMARY KEY,
    plan_hash TEXT NOT NULL UNIQUE,
    experiment TEXT NOT NULL,
    spec_hash TEXT NOT NULL,
    spec_path TEXT,
    spec_text TEXT,
    seed INTEGER NOT NULL,
    plan_json BLOB NOT NULL,
    created REAL NOT NULL,
    run_started REAL
);
CREATE TABLE IF NOT EXISTS kinds (
    id INTEGER PRIMARY KEY,
    plan INTEGER NOT NULL,
    configuration INTEGER NOT NULL,
    label TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    levels TEXT NOT NULL,
    host TEXT NOT NULL,
    order_kind TEXT NOT NULL,
    phase TEXT NOT NULL DEFAULT 'measured' {PHASES},
    UNIQUE (plan, configuration, label, benchmark, levels, host, order_kind, phase)
);
CREATE TABLE IF NOT EXISTS trial_rows (
    plan INTEGER NOT NULL,
    trial INTEGER NOT NULL,
    series INTEGER NOT NULL,
    round INTEGER NOT NULL,
    position INTEGER NOT NULL,
    kind INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    reason TEXT,
    exit_status INTEGER,
    timed_out INTEGER NOT NULL DEFAULT 0,
    started REAL,
    ended REAL,
    duration REAL,
    attempts INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (plan, trial)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS trial_outputs (
    plan INTEGER NOT NULL,
    trial INTEGER NOT NULL,
    stdout_tail BLOB,
    stderr_tail BLOB,
    PRIMARY KEY (plan, trial)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS measure_names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS measure_rows (
    plan INTEGER NOT NULL,
    trial INTEGER NOT NULL,
    name INTEGER NOT NULL,
    value REAL
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
CREATE INDEX IF NOT EXISTS trials_failed ON trial_rows(plan, trial) WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS trials_with_reason ON trial_rows(plan, trial) WHERE reason IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
    plan_hash TEXT NOT NULL,
    at REAL NOT NULL,
    host TEXT,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
"""
"""Schema 7: a trial row carries integer keys (its plan's ``plans.id``, its ``kinds`` row: the
configuration with its label, benchmark, levels, host, order and phase) and is stored in the
B-tree of its key ``(plan, trial)`` (WITHOUT ROWID: one row per trial, what ``--resume`` reads,
with no second copy of the key in an index); its end is ``started + duration`` where that sum
gives it exactly (``ended`` is then NULL: an import's trials, which share their times, store
no time but ``started``); its output tails are in ``trial_outputs``, a row for a trial whose
tails are not both empty (so the rows a resume or a fold reads stay small); a measure row
carries integer keys and its float;
a plan's JSON above ``PLAN_TEXT_MAX`` bytes is stored compressed (``records.stored_plan``).
Readers read the columnar blocks; the views below keep schema 5's SQL."""

_KIND_MATCH = (
    "k.configuration = NEW.configuration AND k.label = NEW.label AND k.benchmark = NEW.benchmark "
    "AND k.levels = NEW.levels AND k.host = NEW.host AND k.order_kind = NEW.order_kind "
    "AND k.phase = coalesce(NEW.phase, 'measured')"
)
_PLAN_OF_NEW = "(SELECT id FROM plans WHERE plan_hash = NEW.plan_hash)"


def end_columns(started: str, ended: str) -> str:
    """SQL of ``trial_rows``' ``ended, duration`` for a trial's start and end: the duration
    where the start plus it gives the end exactly (the end is then NULL), else the end."""
    exact = f"{started} + ({ended} - {started}) = {ended}"
    return (
        f"CASE WHEN {exact} THEN NULL ELSE {ended} END, "
        f"CASE WHEN {exact} THEN {ended} - {started} END"
    )


def views(version: int = SCHEMA_VERSION) -> list[str]:
    """The ``trials`` and ``measures`` views and their triggers, of schema 6 or 7 (whose trial
    rows keep a duration and whose tails are in ``trial_outputs``)."""
    if version < 7:
        ended, tails, outputs = "t.ended", "t.{0}", ""
        new_row = "NEW.ended, coalesce(NEW.attempts, 1), NEW.stdout_tail, NEW.stderr_tail"
        write_outputs = delete_outputs = ""
    else:
        ended = "coalesce(t.ended, t.started + t.duration)"
        tails = "CASE WHEN o.trial IS NULL THEN X'' ELSE o.{0} END"
        outputs = " LEFT JOIN trial_outputs o ON o.plan = t.plan AND o.trial = t.trial"
        new_row = f"{end_columns('NEW.started', 'NEW.ended')}, coalesce(NEW.attempts, 1)"
        write_outputs = f"""
    DELETE FROM trial_outputs WHERE plan = {_PLAN_OF_NEW} AND trial = NEW.trial;
    INSERT INTO trial_outputs SELECT {_PLAN_OF_NEW}, NEW.trial, NEW.stdout_tail, NEW.stderr_tail
    WHERE NOT (NEW.stdout_tail IS X'' AND NEW.stderr_tail IS X'');"""
        delete_outputs = """
    DELETE FROM trial_outputs WHERE plan = (SELECT id FROM plans WHERE plan_hash = OLD.plan_hash)
        AND trial = OLD.trial;"""
    return [
        f"""CREATE VIEW IF NOT EXISTS trials AS SELECT p.plan_hash AS plan_hash, t.trial AS trial,
    t.series AS series, t.round AS round, t.position AS position, k.host AS host,
    k.configuration AS configuration, k.label AS label, k.benchmark AS benchmark,
    k.levels AS levels, k.order_kind AS order_kind, t.status AS status, t.reason AS reason,
    t.exit_status AS exit_status, t.timed_out AS timed_out, t.started AS started,
    {ended} AS ended, t.attempts AS attempts, {tails.format("stdout_tail")} AS stdout_tail,
    {tails.format("stderr_tail")} AS stderr_tail, k.phase AS phase
    FROM trial_rows t JOIN plans p ON p.id = t.plan JOIN kinds k ON k.id = t.kind{outputs}""",
        """CREATE VIEW IF NOT EXISTS measures AS SELECT p.plan_hash AS plan_hash, m.trial AS trial,
    n.name AS name, m.value AS value
    FROM measure_rows m JOIN plans p ON p.id = m.plan JOIN measure_names n ON n.id = m.name""",
        f"""CREATE TRIGGER IF NOT EXISTS trials_insert INSTEAD OF INSERT ON trials
BEGIN
    INSERT INTO kinds (plan, configuration, label, benchmark, levels, host, order_kind, phase)
    SELECT p.id, NEW.configuration, NEW.label, NEW.benchmark, NEW.levels, NEW.host,
        NEW.order_kind, coalesce(NEW.phase, 'measured') FROM plans p
    WHERE p.plan_hash = NEW.plan_hash
        AND NOT EXISTS (SELECT 1 FROM kinds k WHERE k.plan = p.id AND {_KIND_MATCH});
    INSERT INTO trial_rows VALUES ({_PLAN_OF_NEW}, NEW.trial, NEW.series, NEW.round,
        NEW.position, (SELECT k.id FROM kinds k WHERE k.plan = {_PLAN_OF_NEW} AND {_KIND_MATCH}),
        NEW.status, NEW.reason, NEW.exit_status, coalesce(NEW.timed_out, 0), NEW.started,
        {new_row});{write_outputs}
END""",
        f"""CREATE TRIGGER IF NOT EXISTS trials_delete INSTEAD OF DELETE ON trials
BEGIN
    DELETE FROM trial_rows WHERE plan = (SELECT id FROM plans WHERE plan_hash = OLD.plan_hash)
        AND trial = OLD.trial;{delete_outputs}
END""",
        f"""CREATE TRIGGER IF NOT EXISTS measures_insert INSTEAD OF INSERT ON measures
BEGIN
    INSERT INTO measure_names (name) SELECT NEW.name
    WHERE NOT EXISTS (SELECT 1 FROM measure_names WHERE name = NEW.name);
    INSERT INTO measure_rows VALUES ({_PLAN_OF_NEW}, NEW.trial,
        (SELECT id FROM measure_names WHERE name = NEW.name), NEW.value);
END""",
        """CREATE TRIGGER IF NOT EXISTS measures_delete INSTEAD OF DELETE ON measures
BEGIN
    DELETE FROM measure_rows WHERE plan = (SELECT id FROM plans WHERE plan_hash = OLD.plan_hash)
        AND trial = OLD.trial AND name = (SELECT id FROM measure_names WHERE name = OLD.name);
END""",
    ]


VIEWS = views()
"""``trials`` and ``measures`` as schema 5 had them (plan_hash, every text column), for SQL
written against them (docs/store.md#querying-with-sqlite3): selects, inserts and deletes work
through them; an update does not (update ``trial_rows`` or ``measure_rows``)."""
