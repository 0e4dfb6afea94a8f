"""How a failed command is told to the user, and the exception that stops one host."""

from __future__ import annotations

import attrs

from benchlang.backends.base import Execution
from benchlang.run.store import TrialRecord


@attrs.frozen
class FirstRoundFailed:
    """Every trial of the run's first round failed, so the run stopped after it, as hyperfine
    aborts on a failing command unless ``-i``: the command is broken, and
    running the rest of the plan would only repeat the failure. ``first`` is the round's first
    failed trial as stored (its reason, exit status and output tails)."""

    round: int
    host: str
    trials: int
    first: TrialRecord


class HostStopped(Exception):
    """This host's remaining rounds cannot run (failed setup or reset, host down)."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(f"{host}: {message}")
        self.host = host
        self.message = message


def describe_failure(execution: Execution, what: str) -> str:
    if execution.failure:
        return f"{what} failed: {execution.failure}"
    if execution.timed_out:
        return f"{what} timed out after {execution.wall_time:.3g}s"
    if execution.exit_status < 0:
        return f"{what} was killed by signal {-execution.exit_status}"
    return f"{what} exited with status {execution.exit_status}"


def stderr_line(execution: Execution) -> str:
    lines = [
        line for line in execution.stderr.decode(errors="replace").splitlines() if line.strip()
    ]
    return f": {lines[-1][:200]}" if lines else ""
