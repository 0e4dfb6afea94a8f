"""The wire protocol of benchlang's worker agent (ssh_agent.py): the request for a command
and the Execution an answer describes. Shared by every backend that starts the agent (ssh, and
plugins that start it elsewhere, e.g. in a Slurm job step)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchlang.backends.base import Command, Execution
from benchlang.backends.limits import limit_failure, limits_request
from benchlang.backends.local import argv_for

AGENT_PARTS = ("cgroups.py", "agent_host.py", "ssh_agent.py")
"""The agent's modules, standard library only, sent to the remote python3 as one source in
this order (each later one finds the earlier ones' names defined)."""
AGENT_SOURCE = "\n\n".join(
    Path(__file__).with_name(part).read_text(encoding="utf-8") for part in AGENT_PARTS
)


def exec_request(command: Command) -> dict[str, Any]:
    """The agent's ``exec`` request for a command (ssh_agent.py)."""
    limits = limits_request(command.limits)
    return {
        "op": "exec",
        "argv": argv_for(command.text),
        "env": dict(command.env),
        "cwd": command.cwd,
        "timeout": command.timeout,
        **({} if command.aslr is None else {"aslr": command.aslr}),
        **({} if limits is None else {"limits": limits}),
    }


def agent_execution(
    header: Mapping[str, Any], payload: bytes, started: float, ended: float
) -> Execution:
    """The Execution an agent's ``exec`` answer describes (ssh_agent.py; also used by
    backends that start the agent elsewhere, e.g. in a Slurm job step)."""
    out = int(header["out"])
    wall = float(header["wall"])
    failure = header.get("failure")
    if header.get("limits") and failure is None:
        failure = limit_failure(
            header["limits"],
            int(header["status"]),
            bool(header.get("cpu_killed")),
            int(header.get("oom_kills") or 0),
            header.get("cpu_used"),
        )
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
        failure=failure,
    )
