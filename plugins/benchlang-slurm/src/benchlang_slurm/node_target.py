"""What a session needs of the allocation: handed down by the backend, so that
``session.py`` depends on nothing above it (the backend opens sessions, never the reverse)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class NodeTarget:
    """One logical host's place in a running job: its node and CPUs there, how its steps
    start (the agent's Python, the work directory) and how Slurm's commands are run."""

    host: str
    job: str
    node: str
    cpus: int | None
    python: str
    workdir: str
    env: Mapping[str, str]
    config: Callable[[], Awaitable[dict[str, str]]]
    """``scontrol show config`` essentials, read once by the backend."""
