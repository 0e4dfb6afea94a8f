"""The DDL of every earlier store schema (1 to 6), as the benchlang of that version made an
empty store: for ``benchlang store migrate``'s tests, which write stores of each version."""

from __future__ import annotations

from benchlang.run import measure_blocks
from benchlang.run.store.schema import PHASES, SCHEMA, SCHEMA_VERSION, views

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


def _schema_v6() -> list[str]:
    """Schema 6: the current tables but a trial row in a rowid table beside its unique key
    index, with its end, not its duration, and its output tails; a plan's JSON always text;
    trial blocks of rowid ranges above a watermark."""
    tables = SCHEMA.replace("    plan_json BLOB NOT NULL,", "    plan_json TEXT NOT NULL,")
    v7 = (
        "    ended REAL,\n    duration REAL,\n    attempts INTEGER NOT NULL DEFAULT 1,\n"
        "    PRIMARY KEY (plan, trial)\n) WITHOUT ROWID;"
    )
    outputs = tables[tables.index("CREATE TABLE IF NOT EXISTS trial_outputs") :]
    outputs = outputs[: outputs.index(";") + 1]
    if v7 not in tables:
        raise AssertionError("schema 7's trial_rows changed: update schema 6's DDL")
    tables = tables.replace(outputs, "").replace(
        v7,
        "    ended REAL,\n    attempts INTEGER NOT NULL DEFAULT 1,\n    stdout_tail BLOB,\n"
        "    stderr_tail BLOB\n);\n"
        "CREATE UNIQUE INDEX IF NOT EXISTS trial_rows_key ON trial_rows(plan, trial);",
    )
    return [
        *(s for s in tables.split(";") if s.strip()),
        _LEASES,
        *views(6),
        *measure_blocks.BLOCKS_SCHEMA,
        *_blocks_v5(),
        *measure_blocks.invalidation_triggers("trial_rows", "trial_blocks", "trials_folded"),
    ]


def legacy_schema(version: int) -> list[str]:
    """The statements that made an empty store of schema ``version`` (1 to 6), as the
    benchlang of that version made it (blocks empty, their watermarks 0; before schema 6 the
    triggers that dropped the blocks are left out: the blocks are not read from such a
    store)."""
    if not 1 <= version < SCHEMA_VERSION:
        raise ValueError(f"no earlier store schema {version}")
    if version == 6:
        return [*_schema_v6(), "INSERT INTO meta(key, value) VALUES ('schema_version', '6')"]
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
