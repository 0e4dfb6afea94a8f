"""The store's tables (docs/store.md) and its schema version."""

from __future__ import annotations

SCHEMA_VERSION = 5
TAIL_BYTES = 8192

SCHEMA = """
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
CREATE INDEX IF NOT EXISTS trials_failed ON trials(plan_hash, trial) WHERE status = 'failed';
CREATE INDEX IF NOT EXISTS trials_with_reason ON trials(plan_hash, trial) WHERE reason IS NOT NULL;
CREATE TABLE IF NOT EXISTS events (
    plan_hash TEXT NOT NULL,
    at REAL NOT NULL,
    host TEXT,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
"""
