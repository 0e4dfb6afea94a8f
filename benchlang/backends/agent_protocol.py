"""The wire protocol of benchlang's worker agent (ssh_agent.py): the request for a command
and the Execution an answer describes. Shared by every backend that starts the agent (ssh, and
plugins that start it elsewhere, e.g. in a Slurm job step)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchlang.backends.base import Command, Execution
from benchlang.backends.local import argv_for

AGENT_SOURCE = (Path(__file__).with_name("ssh_agent.py")).read_text(encoding="utf-8")
"""The agent's source, sent to the remote python3 (it is stdlib-only)."""


def exec_request(command: Command) -> dict[str, Any]:
    """The agent's ``exec`` request for a command (ssh_agent.py)."""
    return {
        "op": "exec",
        "argv": argv_for(command.text),
        "env": dict(command.env),
        "cwd": command.cwd,
        "timeout": command.timeout,
        **({} if command.aslr is None else {"aslr": command.aslr}),
    }


def agent_execution(
    header: Mapping[str, Any], payload: bytes, started: float, ended: float
) -> Execution:
    """The Execution an agent's ``exec`` answer describes (ssh_agent.py; also used by
    backends that start the agent elsewhere, e.g. in a Slurm job step)."""
    out = int(header["out"])
    wall = float(header["wall"])
    return Execution(
        exit_status=int(header["status"]),
        timed_out=bool(header["timed_out"]),
        started=started,
        ended=max(ended, started + wall),
        wall_time=wall,
        stdout=payload[:out],
        stderr=payload[out:],
        rusage={k: float(v) for k, v in header["rusage"].items()},
        stdout_truncated=bool(header.get("out_truncated", False)),
        stderr_truncated=bool(header.get("err_truncated", False)),
        stdout_size=header.get("out_size"),
        stderr_size=header.get("err_size"),
        unavailable=dict(header.get("unavailable", {})),
        left_running=int(header.get("left_running", 0)),
    )
