"""Slurm's own commands, run as subprocesses, and their output read back.

No library binding (pyslurm must match the cluster's Slurm exactly; submitit pickles Python
functions): ``sbatch --parsable`` prints ``JOBID[;CLUSTER]``; ``scontrol show job -o`` and
``scontrol show node -o`` print one record per line as ``Key=Value`` pairs separated by
spaces (a value may hold spaces, e.g. ``OS=Linux 6.1 #1 SMP``; with ``-d`` the job record
repeats ``Nodes=... CPU_IDs=... Mem=...`` for each group of nodes); ``scontrol show config``
prints ``Key = Value`` lines; ``scontrol show hostnames EXPR`` expands ``n[1-3]`` one name a
line; ``scancel`` of a finished job succeeds. Formats as of Slurm 20.11-24.05 (man pages
scontrol(1), sbatch(1)).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Mapping, Sequence

COMMAND_TIMEOUT = 60.0
_KEY = re.compile(r"(?:^|\s+)([A-Za-z_][\w/:.\-]*)=")
_GONE = ("Invalid job id", "already completing or completed")
TERMINAL = frozenset(
    {
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "COMPLETING",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "SPECIAL_EXIT",
        "STOPPED",
        "TIMEOUT",
    }
)
"""Job states after which the allocation is gone (squeue(1), JOB STATE CODES)."""
CONFIG_ESSENTIALS = {
    "SLURM_VERSION": "slurm_version",
    "ClusterName": "slurm_cluster",
    "SelectType": "slurm_select_type",
    "SelectTypeParameters": "slurm_select_parameters",
    "ProctrackType": "slurm_proctrack",
    "TaskPlugin": "slurm_task_plugin",
    "SchedulerType": "slurm_scheduler",
    "PreemptType": "slurm_preempt",
    "AccountingStorageType": "slurm_accounting",
    "JobAcctGatherType": "slurm_acct_gather",
}
"""What of ``scontrol show config`` goes into each host's facts: what shapes a measurement."""


class SlurmError(OSError):
    """A Slurm command failed; the message carries what it said."""


def slurm_env(conf: str | None = None) -> dict[str, str]:
    """This process's environment, with ``SLURM_CONF`` when the lease names a config file."""
    env = dict(os.environ)
    if conf:
        env["SLURM_CONF"] = conf
    return env


async def run(
    argv: Sequence[str], env: Mapping[str, str], timeout: float = COMMAND_TIMEOUT
) -> tuple[int, str, str]:
    """Run a Slurm client command: (status, stdout, stderr); killed after ``timeout``."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
        )
    except FileNotFoundError:
        raise SlurmError(
            f"{argv[0]} is not installed here: benchlang drives Slurm's commands, so run it "
            "on a machine that can submit jobs (a login node)"
        ) from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        await _kill(proc)
        raise SlurmError(f"{argv[0]} did not answer within {timeout:g}s") from None
    except BaseException:
        await _kill(proc)
        raise
    return proc.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


async def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGKILL)
    with contextlib.suppress(TimeoutError, ProcessLookupError):
        await asyncio.wait_for(proc.wait(), 5.0)


async def check(
    argv: Sequence[str], env: Mapping[str, str], timeout: float = COMMAND_TIMEOUT
) -> str:
    """stdout of a command that must succeed, else SlurmError with its last error line."""
    status, out, err = await run(argv, env, timeout)
    if status != 0:
        raise SlurmError(f"{' '.join(argv[:3])} failed (status {status}): {last_line(err)}")
    return out


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else "no message"


def pairs(text: str) -> list[tuple[str, str]]:
    """``Key=Value`` pairs of one ``-o`` record, in order (keys may repeat)."""
    keys = list(_KEY.finditer(text))
    return [
        (
            m.group(1),
            text[m.end() : keys[i + 1].start() if i + 1 < len(keys) else len(text)].strip(),
        )
        for i, m in enumerate(keys)
    ]


def record(text: str) -> dict[str, str]:
    """The first record of ``scontrol show ... -o`` output as a dict (first value of a key)."""
    line = next((line for line in text.splitlines() if line.strip()), "")
    found: dict[str, str] = {}
    for key, value in pairs(line):
        found.setdefault(key, value)
    return found


def config_essentials(text: str) -> dict[str, str]:
    """The ``CONFIG_ESSENTIALS`` of ``scontrol show config`` output, as fact names."""
    found = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() in CONFIG_ESSENTIALS:
            found.setdefault(CONFIG_ESSENTIALS[key.strip()], value.strip())
    return found


def count_ids(ids: str) -> int:
    """How many CPUs ``CPU_IDs=0-3,8`` names."""
    total = 0
    for part in ids.split(","):
        low, _, high = part.partition("-")
        with contextlib.suppress(ValueError):
            total += int(high) - int(low) + 1 if high else 1
    return total


def epoch(stamp: str) -> float | None:
    """Epoch seconds of a Slurm time stamp (``2026-11-24T09:16:39``, the controller's local
    time); None for ``Unknown``, ``None``, ``N/A``."""
    try:
        parsed = time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    return float(time.mktime(parsed))


def utc_stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(seconds))


def duration(seconds: float) -> str:
    """``--time`` as ``D-HH:MM:SS`` (sbatch(1)); Slurm rounds it up to whole minutes."""
    whole = max(60, int(-(-seconds // 60)) * 60)
    days, rest = divmod(whole, 86400)
    return f"{days}-{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


async def job(job_id: str, env: Mapping[str, str]) -> dict[str, str] | None:
    """``scontrol show job -d -o``, or None once Slurm no longer knows the job."""
    status, out, err = await run(["scontrol", "show", "job", "-d", "-o", job_id], env)
    if status != 0:
        if any(text in err for text in _GONE):
            return None
        raise SlurmError(f"scontrol show job {job_id} failed: {last_line(err)}")
    found = record(out)
    found["_cpus"] = _cpu_groups(out)
    return found


def _cpu_groups(text: str) -> str:
    """The ``Nodes=... CPU_IDs=...`` groups of a detailed job record as ``EXPR:COUNT;...``."""
    groups, nodes = [], None
    for key, value in pairs(text):
        if key == "Nodes":
            nodes = value
        elif key == "CPU_IDs" and nodes:
            groups.append(f"{nodes}:{count_ids(value)}")
            nodes = None
    return ";".join(groups)


async def node_cpus(info: Mapping[str, str], env: Mapping[str, str]) -> dict[str, int]:
    """CPUs the job holds on each of its nodes."""
    cpus: dict[str, int] = {}
    for group in filter(None, info.get("_cpus", "").split(";")):
        expr, _, count = group.rpartition(":")
        for name in await hostnames(expr, env):
            cpus[name] = int(count)
    return cpus


async def node(name: str, env: Mapping[str, str]) -> dict[str, str]:
    return record(await check(["scontrol", "show", "node", "-o", name], env))


NODE_FACTS = {
    "Partitions": "slurm_partitions",
    "CPUTot": "slurm_cpus",
    "RealMemory": "slurm_real_memory_mb",
    "AvailableFeatures": "slurm_features",
    "ActiveFeatures": "slurm_active_features",
    "Gres": "slurm_gres",
    "Sockets": "slurm_sockets",
    "CoresPerSocket": "slurm_cores_per_socket",
    "ThreadsPerCore": "slurm_threads_per_core",
}
"""What of a node's ``scontrol show node`` record becomes host facts, and under which name."""


def node_facts(name: str, node: Mapping[str, str]) -> dict[str, str]:
    """A node's facts from its record (``(null)`` and empty values left out)."""
    found = {"slurm_node": name, **{fact: node.get(key, "") for key, fact in NODE_FACTS.items()}}
    return {k: v for k, v in found.items() if v not in ("", "(null)")}


async def hostnames(expr: str, env: Mapping[str, str]) -> list[str]:
    """``n[1-3],m`` expanded, in Slurm's order."""
    if not expr or expr in ("(null)", "None"):
        return []
    return (await check(["scontrol", "show", "hostnames", expr], env)).split()


async def config(env: Mapping[str, str]) -> dict[str, str]:
    return config_essentials(await check(["scontrol", "show", "config"], env))


async def cancel(job_id: str, env: Mapping[str, str], signal_name: str | None = None) -> None:
    """``scancel`` a job or step (``JOB.STEP``); one Slurm no longer knows is not an error."""
    argv = ["scancel", *([f"--signal={signal_name}"] if signal_name else []), job_id]
    status, _out, err = await run(argv, env)
    if status != 0 and not any(text in err for text in _GONE):
        raise SlurmError(f"scancel {job_id} failed (status {status}): {last_line(err)}")


async def steps(job_id: str, env: Mapping[str, str]) -> list[str]:
    """The job's running command steps (``JOB.N``; not its batch or extern step)."""
    out = await check(["squeue", "--noheader", "--steps", f"--jobs={job_id}", "--format=%i"], env)
    return [step for step in out.split() if step.rpartition(".")[2].isdigit()]


def usable(state: str) -> bool:
    """Whether a node in this ``State`` still runs job steps (not DOWN, FAIL, NOT_RESPONDING
    (``*``), powered down); DRAIN keeps running the jobs already on it."""
    flags = set(state.rstrip("*").split("+"))
    return not state.endswith("*") and not flags & {
        "DOWN",
        "FAIL",
        "FAILING",
        "NOT_RESPONDING",
        "POWERED_DOWN",
        "POWERING_DOWN",
        "UNKNOWN",
    }
