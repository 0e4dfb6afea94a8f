"""The settings of ``hosts slurm { ... }``: checked without I/O, turned into sbatch options."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from benchlang.backends.base import SettingError
from benchlang_slurm.commands import duration

KEYS = {
    "partition": "the partition to submit to",
    "nodes": "how many nodes (one logical host each: node0, node1, ...)",
    "nodelist": "these nodes by name (each its own logical host)",
    "constraint": "node features the nodes must have (sbatch --constraint)",
    "exclusive": "true: no other job shares the nodes",
    "time": "the allocation's time limit, e.g. 2h",
    "account": "the account charged",
    "qos": "the quality of service",
    "cpus_per_task": "CPUs of each node given to a trial",
    "workdir": "the directory trials run in on the nodes (default: the spec's directory)",
    "python": "the Python 3 that runs benchlang's agent on the nodes (default python3)",
    "start_timeout": "give up when the allocation has not started after this long",
}
_STRINGS = ("partition", "constraint", "account", "qos", "workdir", "python")


@attrs.frozen
class SlurmSettings:
    """What a ``hosts slurm`` block asks for."""

    nodes: int = 1
    nodelist: tuple[str, ...] = ()
    partition: str | None = None
    constraint: str | None = None
    exclusive: bool = False
    time: float | None = None
    account: str | None = None
    qos: str | None = None
    cpus_per_task: int | None = None
    workdir: str | None = None
    python: str = "python3"
    start_timeout: float | None = None
    memory_mib: int | None = None
    """Memory of each node the allocation asks for (``--mem``), set from the machine block's
    memory limit (backend.size_allocation), not a setting of the hosts block."""

    def hosts(self) -> tuple[str, ...]:
        """Logical host names: the listed nodes, else node0..node{N-1}."""
        return self.nodelist or tuple(f"node{i}" for i in range(self.nodes))

    def sbatch_options(self) -> list[str]:
        """The allocation's sbatch options: one task per node, the whole block's request.
        With several nodes ``--no-kill``: a node that fails leaves the job (Slurm excises it)
        instead of ending it, so only that node's host goes down and its rounds go to the
        others, as for a dead SSH host (sbatch(1), ``--no-kill``)."""
        options = [
            f"--nodes={len(self.hosts())}",
            "--ntasks-per-node=1",
            *(["--no-kill"] if len(self.hosts()) > 1 else []),
        ]
        for flag, value in (
            ("--nodelist", ",".join(self.nodelist)),
            ("--partition", self.partition),
            ("--constraint", self.constraint),
            ("--account", self.account),
            ("--qos", self.qos),
            ("--cpus-per-task", self.cpus_per_task),
            ("--mem", f"{self.memory_mib}M" if self.memory_mib and not self.exclusive else None),
            ("--time", duration(self.time) if self.time is not None else None),
        ):
            if value:
                options.append(f"{flag}={value}")
        if self.exclusive:
            options += ["--exclusive", "--mem=0"]  # all CPUs and all memory of each node
        return options


def _flag(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise SettingError(key, f"{key} takes true or false")


def _whole(key: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SettingError(key, f"{key} must be a whole number of at least 1, got {value!r}")
    return value


def _seconds(key: str, value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        raise SettingError(key, f"{key} takes a duration such as 2h or 30m")
    return float(value)


def parse(settings: Mapping[str, Any]) -> SlurmSettings:
    """Validate (no I/O) and convert; SettingError names the bad key."""
    for key in settings:
        if key not in KEYS:
            raise SettingError(
                key, f"unknown setting '{key}'", f"hosts slurm accepts: {', '.join(sorted(KEYS))}"
            )
    for key in _STRINGS:
        if key in settings and not (isinstance(settings[key], str) and settings[key].strip()):
            raise SettingError(key, f"{key} takes a non-empty string in double quotes")
    if "nodes" in settings and "nodelist" in settings:
        raise SettingError(
            "nodelist",
            "give nodes or nodelist, not both",
            "nodes N lets Slurm choose N nodes; nodelist names them",
        )
    nodelist: tuple[str, ...] = ()
    if "nodelist" in settings:
        value = settings["nodelist"]
        items = (value,) if isinstance(value, str) else value
        if (
            not isinstance(items, tuple)
            or not items
            or not all(isinstance(v, str) and v and v.strip() == v and "," not in v for v in items)
        ):
            raise SettingError(
                "nodelist", 'nodelist takes node names in double quotes: ["n01", "n02"]'
            )
        if any("[" in v for v in items):
            raise SettingError(
                "nodelist",
                "nodelist takes node names, not Slurm's ranges",
                'write each node: ["n01", "n02", "n03"]',
            )
        if len(set(items)) != len(items):
            raise SettingError("nodelist", "a node is listed twice")
        nodelist = tuple(items)
    return SlurmSettings(
        nodes=_whole("nodes", settings["nodes"]) if "nodes" in settings else 1,
        nodelist=nodelist,
        partition=settings.get("partition"),
        constraint=settings.get("constraint"),
        exclusive=_flag("exclusive", settings["exclusive"]) if "exclusive" in settings else False,
        time=_seconds("time", settings["time"]) if "time" in settings else None,
        account=settings.get("account"),
        qos=settings.get("qos"),
        cpus_per_task=_whole("cpus_per_task", settings["cpus_per_task"])
        if "cpus_per_task" in settings
        else None,
        workdir=settings.get("workdir"),
        python=settings.get("python", "python3"),
        start_timeout=_seconds("start_timeout", settings["start_timeout"])
        if "start_timeout" in settings
        else None,
    )
