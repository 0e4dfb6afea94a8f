"""The executor (docs/architecture.md#run): ``Executor`` runs a plan through a backend into a
store. The package's modules are its rooms, named in ``core``'s docstring."""

from benchlang.run.executor.core import (
    MAX_CONSECUTIVE_TIMEOUTS,
    RECONNECT_TIMEOUT,
    RETRY_BACKOFF,
    TRANSIENT_RETRIES,
    Executor,
    RunSummary,
)
from benchlang.run.executor.failures import FirstRoundFailed, HostStopped
from benchlang.run.executor.reaping import kill_descendants

__all__ = [
    "MAX_CONSECUTIVE_TIMEOUTS",
    "RECONNECT_TIMEOUT",
    "RETRY_BACKOFF",
    "TRANSIENT_RETRIES",
    "Executor",
    "FirstRoundFailed",
    "HostStopped",
    "RunSummary",
    "kill_descendants",
]
