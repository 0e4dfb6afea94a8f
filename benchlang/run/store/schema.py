"""The store's tables (docs/store.md), its schema version, and the DDL of every earlier version
(for ``benchlang store migrate`` and its tests)."""

from __future__ import annotations

SCHEMA_VERSION = 6
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
    plan_json TEXT NOT NULL,
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
    attempts INTEGER NOT NULL DEFAULT 1,
    stdout_tail BLOB,
    stderr_tail BLOB
);
CREATE UNIQUE INDEX IF NOT EXISTS trial_rows_key ON trial_rows(plan, trial);
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
"""Schema 6: a trial row carries integer keys (its plan's ``plans.id``, its ``kinds`` row: the
configuration with its label, benchmark, levels, host, order and phase) and a measure row
integer keys and its float; ``trial_rows_key`` is the one index a trial needs (resume, one row
per trial). Readers read the columnar blocks; the views below keep schema 5's SQL."""

_KIND_MATCH = (
    "k.configuration = NEW.configuration AND k.label = NEW.label AND k.benchmark = NEW.benchmark "
    "AND k.levels = NEW.levels AND k.host = NEW.host AND k.order_kind = NEW.order_kind "
    "AND k.phase = coalesce(NEW.phase, 'measured')"
)
_PLAN_OF_NEW = "(SELECT id FROM plans WHERE plan_hash = NEW.plan_hash)"

VIEWS = [
    """CREATE VIEW IF NOT EXISTS trials AS SELECT p.plan_hash AS plan_hash, t.trial AS trial,
    t.series AS series, t.round AS round, t.position AS position, k.host AS host,
    k.configuration AS configuration, k.label AS label, k.benchmark AS benchmark,
    k.levels AS levels, k.order_kind AS order_kind, t.status AS status, t.reason AS reason,
    t.exit_status AS exit_status, t.timed_out AS timed_out, t.started AS started,
    t.ended AS ended, t.attempts AS attempts, t.stdout_tail AS stdout_tail,
    t.stderr_tail AS stderr_tail, k.phase AS phase
    FROM trial_rows t JOIN plans p ON p.id = t.plan JOIN kinds k ON k.id = t.kind""",
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
        NEW.ended, coalesce(NEW.attempts, 1), NEW.stdout_tail, NEW.stderr_tail);
END""",
    """CREATE TRIGGER IF NOT EXISTS trials_delete INSTEAD OF DELETE ON trials
BEGIN
    DELETE FROM trial_rows WHERE plan = (SELECT id FROM plans WHERE plan_hash = OLD.plan_hash)
        AND trial = OLD.trial;
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
"""``trials`` and ``measures`` as schema 5 had them (plan_hash, every text column), for SQL
written against them (docs/store.md#querying-with-sqlite3): selects, inserts and deletes work
through them; an update does not (update ``trial_rows`` or ``measure_rows``)."""

_V5_TABLES = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE plans (
    plan_hash TEXT PRIMARY KEY, experiment TEXT NOT NULL, spec_hash TEXT NOT NULL,
    spec_path TEXT, spec_text TEXT, seed INTEGER NOT NULL, plan_json TEXT NOT NULL,
    created REAL NOT NULL, run_started REAL
);
CREATE TABLE trials (
    plan_hash TEXT NOT NULL, trial INTEGER NOT NULL, series INTEGER NOT NULL,
    round INTEGER NOT NULL, position INTEGER NOT NULL, host TEXT NOT NULL,
    configuration INTEGER NOT NULL, label TEXT NOT NULL, benchmark TEXT NOT NULL,
    levels TEXT NOT NULL, order_kind TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')), reason TEXT, exit_status INTEGER,
    timed_out INTEGER NOT NULL DEFAULT 0, started REAL, ended REAL,
    attempts INTEGER NOT NULL DEFAULT 1, stdout_tail BLOB, stderr_tail BLOB,
    phase TEXT NOT NULL DEFAULT 'measured' {PHASES},
    PRIMARY KEY (plan_hash, trial)
);
CREATE TABLE measures (
    plan_hash TEXT NOT NULL, trial INTEGER NOT NULL, name TEXT NOT NULL, value REAL,
    PRIMARY KEY (plan_hash, trial, name)
);
CREATE TABLE series_values (
    plan_hash TEXT NOT NULL, trial INTEGER NOT NULL, name TEXT NOT NULL, data BLOB NOT NULL,
    PRIMARY KEY (plan_hash, trial, name)
);
CREATE TABLE rounds (
    plan_hash TEXT NOT NULL, round INTEGER NOT NULL, host TEXT NOT NULL,
    order_kind TEXT NOT NULL, permutation TEXT NOT NULL, started REAL, ended REAL,
    reset_status TEXT, PRIMARY KEY (plan_hash, round)
);
CREATE TABLE hosts (
    plan_hash TEXT NOT NULL, host TEXT NOT NULL, facts TEXT NOT NULL, recorded REAL NOT NULL,
    PRIMARY KEY (plan_hash, host)
);
CREATE TABLE stops (
    plan_hash TEXT NOT NULL, series INTEGER NOT NULL, configuration INTEGER NOT NULL,
    after_trials INTEGER NOT NULL, action TEXT NOT NULL, rule TEXT NOT NULL,
    detected_class TEXT, reason TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (plan_hash, series, configuration)
);
CREATE INDEX trials_failed ON trials(plan_hash, trial) WHERE status = 'failed';
CREATE INDEX trials_with_reason ON trials(plan_hash, trial) WHERE reason IS NOT NULL;
CREATE TABLE events (
    plan_hash TEXT NOT NULL, at REAL NOT NULL, host TEXT, kind TEXT NOT NULL,
    message TEXT NOT NULL
);
"""

_LEASES = """CREATE TABLE leases (
    id TEXT PRIMARY KEY, plan_hash TEXT NOT NULL, kind TEXT NOT NULL, lease TEXT NOT NULL,
    spec_dir TEXT, acquired REAL NOT NULL, released REAL
)"""


def _blocks_v4() -> list[str]:
    return [
        """CREATE TABLE measure_blocks (
    plan_hash TEXT NOT NULL, name TEXT NOT NULL, first_row INTEGER NOT NULL,
    last_row INTEGER NOT NULL, trials BLOB NOT NULL, "values" BLOB NOT NULL,
    PRIMARY KEY (plan_hash, name, first_row)
)""",
        "INSERT INTO meta(key, value) VALUES ('measures_folded', '0')",
    ]


def _blocks_v5() -> list[str]:
    return [
        """CREATE TABLE trial_blocks (
    plan_hash TEXT NOT NULL, first_row INTEGER NOT NULL, last_row INTEGER NOT NULL,
    numbers BLOB NOT NULL, codes BLOB NOT NULL, dictionary TEXT NOT NULL,
    PRIMARY KEY (plan_hash, first_row)
)""",
        "INSERT INTO meta(key, value) VALUES ('trials_folded', '0')",
    ]


def legacy_schema(version: int) -> list[str]:
    """The statements that made an empty store of schema ``version`` (1 to 5), as the
    benchlang of that version made it (blocks empty, their watermarks 0; the triggers that
    dropped the blocks are left out: the blocks are not read from such a store)."""
    if not 1 <= version < SCHEMA_VERSION:
        raise ValueError(f"no earlier store schema {version}")
    tables = _V5_TABLES
    if version == 1:
        tables = tables.replace(f"\n    phase TEXT NOT NULL DEFAULT 'measured' {PHASES},", "")
    statements = [s for s in tables.split(";") if s.strip()]
    if version >= 3:
        statements.append(_LEASES)
    if version >= 4:
        statements += _blocks_v4()
    if version >= 5:
        statements += _blocks_v5()
    return [*statements, f"INSERT INTO meta(key, value) VALUES ('schema_version', '{version}')"]
