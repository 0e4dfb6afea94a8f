"""The store: one SQLite file (WAL) holding plans, trials, measures and run metadata.

Each finished trial is written in its own transaction, committed before the next trial
starts. With WAL and synchronous=NORMAL a committed trial survives the process being
killed at any instant; an operating-system crash may roll back the last few commits,
and ``--resume`` then runs exactly those trials again. Schema: docs/store.md.

The package's rooms: ``schema`` (tables and version), ``records`` (what goes in and comes
out), ``locks`` (one writer), ``core`` (opening, checking the schema, closing), ``writing``
and ``reading`` (the methods ``Store`` mixes in), ``migrate`` (an earlier schema's store copied
into the current one and compared).
"""

from benchlang.run.store.core import Store
from benchlang.run.store.locks import StoreBusy, StoreWriteError, lock_path
from benchlang.run.store.records import StopRecord, StoredPlan, TrialRecord, TrialTable, tail
from benchlang.run.store.schema import SCHEMA_VERSION, TAIL_BYTES

__all__ = [
    "SCHEMA_VERSION",
    "TAIL_BYTES",
    "StopRecord",
    "Store",
    "StoreBusy",
    "StoreWriteError",
    "StoredPlan",
    "TrialRecord",
    "TrialTable",
    "lock_path",
    "tail",
]
