"""``hosts slurm { ... }``: the allocation is a holder job, trials are job steps in it.

acquire submits one batch job with ``sbatch --parsable`` whose script only sleeps (the
holder): it allocates the nodes and keeps them until ``scancel`` or its time limit. sbatch
rather than ``salloc --no-shell`` because it returns the job id at once, before the job
starts: a run interrupted while the job is pending still knows what to cancel, and the
pending reason can be read and reported. The holder is submitted with ``--no-requeue`` (a
failed node ends the allocation instead of silently moving it) and ``--ntasks-per-node=1``.
release is ``scancel JOB``, idempotent. Every command the executor sends runs as its own job
step on the node of its logical host (session.py). Job and node state come from
``scontrol show job`` / ``scontrol show node``; see docs/slurm.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import attrs

from benchlang.backends.base import PROTOCOL_VERSION, HostDown, Lease
from benchlang.errors import UserError
from benchlang.model import Machine
from benchlang_slurm import commands
from benchlang_slurm.commands import SlurmError
from benchlang_slurm.node_target import NodeTarget
from benchlang_slurm.settings import SlurmSettings, parse

log = logging.getLogger("benchlang.slurm")

HOLDER = "exec sleep infinity"
"""The holder job's script: the allocation lives as long as it does (until scancel)."""
JOB_NAME = "benchlang"
POLL_MAX = 2.0
AGENT_MEMORY = 128 * 2**20
"""Bytes asked beyond a trial's memory limit: the agent (a Python process) and srun's step."""
FAST_POLLS = 3.0
"""A pending job is looked at every 0.1 s for this long (most start within it), then ever
less often, up to every POLL_MAX seconds."""


class SlurmBackend:
    """Logical hosts ``node0..`` (or the listed nodes) on the nodes of one Slurm allocation."""

    kind: ClassVar[str] = "slurm"
    protocol: ClassVar[int] = PROTOCOL_VERSION
    capabilities: ClassVar[frozenset[str]] = frozenset({"aslr", "pin", "memory", "cpu_time"})
    """The agent in each job step applies them, as on any host (docs/machine.md)."""
    secret_settings: ClassVar[frozenset[str]] = frozenset()
    supports_reboot: ClassVar[bool] = False

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        parse(settings)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> SlurmBackend:
        parsed = parse(settings)
        workdir = os.path.expanduser(parsed.workdir) if parsed.workdir else str(spec_dir)
        if not workdir.startswith("~"):
            workdir = str((Path(spec_dir) / workdir).resolve())
        return cls(parsed, workdir)

    def __init__(self, settings: SlurmSettings, workdir: str) -> None:
        self.settings = settings
        self.workdir = workdir
        self.lease: Lease | None = None
        self._config: dict[str, str] | None = None

    def hosts(self) -> tuple[str, ...]:
        return self.settings.hosts()

    def size_allocation(self, machines: Mapping[str, Machine | None]) -> None:
        """The allocation sized from each host's machine block before ``acquire``
        (docs/machine.md): named CPUs take the nodes whole (``--exclusive``: the CPUs exist
        in the allocation and no other job runs on them; pinning is then the agent's, since
        ``srun --cpu-bind`` does nothing under ``TaskPlugin=task/none``); a memory limit asks
        ``--mem`` of the largest limit plus AGENT_MEMORY for the agent and its step."""
        blocks = [m for m in machines.values() if m is not None]
        if any(m.cpus for m in blocks):
            self.settings = attrs.evolve(self.settings, exclusive=True)
        memory = max((m.memory for m in blocks if m.memory), default=None)
        if memory is not None:
            mib = -(-(memory + AGENT_MEMORY) // 2**20)
            self.settings = attrs.evolve(self.settings, memory_mib=mib)

    # -- the lease -----------------------------------------------------------------------

    def env(self, lease: Lease | None = None) -> dict[str, str]:
        """The environment Slurm's commands run in: the lease's SLURM_CONF when it has one."""
        lease = lease or self.lease
        return commands.slurm_env(lease.handle.get("slurm_conf") if lease else None)

    async def config(self) -> dict[str, str]:
        """``scontrol show config`` essentials, read once."""
        if self._config is None:
            self._config = await commands.config(self.env())
        return self._config

    async def acquire(self, deadline: float | None) -> Lease:
        env = self.env()
        try:
            cluster = (await self.config()).get("slurm_cluster", "slurm")
            out = await commands.check(
                [
                    "sbatch",
                    "--parsable",
                    "--no-requeue",
                    f"--job-name={JOB_NAME}",
                    "--output=/dev/null",
                    "--error=/dev/null",
                    "--chdir=/tmp",
                    *self.settings.sbatch_options(),
                    f"--wrap={HOLDER}",
                ],
                env,
            )
        except SlurmError as err:
            raise HostDown("slurm", f"cannot submit the allocation: {err}") from None
        job = out.strip().split(";")[0]
        try:
            info = await self._wait_running(job, deadline, env)
            lease = await self._lease_of(job, cluster, info, env)
        except BaseException:
            with contextlib.suppress(SlurmError):
                await commands.cancel(job, env)
            raise
        self.lease = lease
        log.info("slurm job %s holds %s", job, ", ".join(lease.hosts.values()))
        return lease

    async def _wait_running(
        self, job: str, deadline: float | None, env: Mapping[str, str]
    ) -> dict[str, str]:
        """The job's record once it runs; HostDown if it ends first or ``deadline`` passes."""
        limit = self.settings.start_timeout
        ends = [d for d in (deadline, time.time() + limit if limit else None) if d is not None]
        give_up = min(ends) if ends else None
        pause, reason, waiting = 0.1, "", time.monotonic()
        while True:
            try:
                info = await commands.job(job, env)
            except SlurmError as err:
                raise HostDown("slurm", f"job {job}: {err}") from None
            if info is None:
                raise HostDown("slurm", f"job {job} vanished before it started")
            state = info.get("JobState", "")
            if state == "RUNNING":
                return info
            if state in commands.TERMINAL:
                raise HostDown(
                    "slurm", f"job {job} ended before it started: {state} ({info.get('Reason')})"
                )
            waited = time.monotonic() - waiting
            if info.get("Reason") != reason and (
                waited > FAST_POLLS or info.get("Reason") != "None"
            ):
                reason = info.get("Reason", "")  # said when it waits for something
                log.warning("slurm job %s is %s (%s)", job, state, reason)
            if give_up is not None and time.time() >= give_up:
                raise HostDown(
                    "slurm",
                    f"job {job} has not started by {commands.utc_stamp(give_up)}: "
                    f"{state} ({info.get('Reason')}); it was cancelled",
                )
            await asyncio.sleep(pause)
            if waited > FAST_POLLS:
                pause = min(pause * 2, POLL_MAX)

    async def _lease_of(
        self, job: str, cluster: str, info: Mapping[str, str], env: Mapping[str, str]
    ) -> Lease:
        nodes = await commands.hostnames(info.get("NodeList", ""), env)
        cpus = await commands.node_cpus(info, env)
        logical = self.hosts()
        if self.settings.nodelist:
            missing = [n for n in logical if n not in nodes]
            if missing:
                raise HostDown("slurm", f"job {job} got {nodes}, not {', '.join(missing)}")
            mapping = {n: n for n in logical}
        elif len(nodes) != len(logical):
            raise HostDown("slurm", f"job {job} got {len(nodes)} nodes, not {len(logical)}")
        else:
            mapping = dict(zip(logical, nodes, strict=True))
        return Lease(
            id=f"{cluster}:{job}",
            kind=self.kind,
            hosts=mapping,
            resources=tuple(
                {
                    "node": node,
                    "cpus": str(cpus.get(node, "")),
                    "partition": info.get("Partition", ""),
                }
                for node in mapping.values()
            ),
            expires=commands.epoch(info.get("EndTime", "")),
            handle={
                "job": job,
                "cluster": cluster,
                "slurm_conf": env.get("SLURM_CONF", ""),
            },
        )

    async def attach(self, lease: Lease) -> None:
        """Use the holder job of an earlier run (``--resume``) if it still runs."""
        job = lease.handle["job"]
        try:
            info = await commands.job(job, self.env(lease))
        except SlurmError as err:
            raise HostDown("slurm", f"job {job}: {err}") from None
        if info is None or info.get("JobState") != "RUNNING":
            state = "gone" if info is None else f"{info.get('JobState')} ({info.get('Reason')})"
            raise HostDown("slurm", f"job {job} is {state}")
        try:
            await self._end_left_steps(job, self.env(lease))
        except SlurmError as err:
            raise HostDown("slurm", f"job {job}: {err}") from None
        self.lease = lease

    async def _end_left_steps(self, job: str, env: Mapping[str, str]) -> None:
        """Cancel the steps a killed run left in the job: each holds its node's CPUs
        (``--exclusive``), so a new step would wait for them forever. A step created but
        never launched (its srun SIGKILLed in between; session.py ``Step.start`` keeps a
        killed run from doing that) outlives every scancel: HostDown, and a new allocation."""
        left = await commands.steps(job, env)
        for step in left:
            log.info("slurm job %s: cancelling step %s left by the run that was killed", job, step)
            await commands.cancel(step, env)
        started = time.monotonic()
        again = started + 5.0
        while left and time.monotonic() < started + 60.0:
            await asyncio.sleep(0.2)
            left = [step for step in await commands.steps(job, env) if step in left]
            if left and time.monotonic() > again:
                # a step still ending its tasks after SIGTERM waits out Slurm's KillWait (30 s
                # by default), and one still being launched when it was cancelled starts its
                # tasks after: the run that owned them is dead, so every 5 s the step is
                # cancelled again and its tasks get SIGKILL
                for step in left:
                    await commands.cancel(step, env)
                    await commands.cancel(step, env, "KILL")
                again = time.monotonic() + 5.0
        if left:
            raise HostDown(
                "slurm",
                f"job {job}: steps {', '.join(left)} did not end after scancel (a step whose "
                "srun was killed after creating it and before launching it has no process to "
                "end, and Slurm keeps it until the job ends; or its tasks cannot be killed)",
            )

    async def release(self, lease: Lease) -> None:
        """``scancel`` the holder job (every step in it ends with it); idempotent."""
        env = self.env(lease)
        job = lease.handle["job"]
        await commands.cancel(job, env)
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            info = await commands.job(job, env)
            if info is None or info.get("JobState") in commands.TERMINAL:
                break
            await asyncio.sleep(0.2)
        if self.lease is not None and self.lease.id == lease.id:
            self.lease = None

    async def inventory(self) -> dict[str, dict[str, str]]:
        """Each listed node's facts from ``scontrol show node``, without allocating: what
        hardware factors and ``hosts where`` plan with (docs/hardware-factors.md). Only with
        ``nodelist``: with ``nodes N`` the nodes are known once the job runs."""
        if not self.settings.nodelist:
            raise UserError(
                "hosts slurm: hardware factors and 'hosts where' need the nodes named "
                "(with 'nodes N' Slurm picks the nodes only when the job starts)",
                'name the candidate nodes: hosts slurm { nodelist ["n01", "n02"] }',
            )
        env = self.env()
        found: dict[str, dict[str, str]] = {}
        for name in self.settings.nodelist:
            try:
                node = await commands.node(name, env)
            except SlurmError as err:
                found[name] = {"unreachable": str(err)}
                continue
            facts = commands.node_facts(name, node)
            memory = node.get("RealMemory", "")
            facts.update(
                {
                    "arch": node.get("Arch", ""),
                    "cores": node.get("CPUTot", ""),
                    # Slurm's RealMemory (MiB): the memory the node offers jobs
                    "memory": f"{int(memory) * 1024} kB" if memory.isdigit() else "",
                    "kernel": " ".join(node.get("OS", "").split()[:2]),
                }
            )
            found[name] = {k: v for k, v in facts.items() if v}
        return found

    # -- hosts ---------------------------------------------------------------------------

    async def open(self, host: str):
        from benchlang_slurm.session import SlurmSession

        if self.lease is None:
            raise HostDown(host, "no Slurm allocation: the run acquires one before opening hosts")
        node, cpus = self.node_of(host)
        target = NodeTarget(
            host=host,
            job=self.lease.handle["job"],
            node=node,
            cpus=cpus,
            python=self.settings.python,
            workdir=self.workdir,
            env=self.env(),
            config=self.config,
        )
        session = SlurmSession(target)
        await session.check_job()
        return session

    def node_of(self, host: str) -> tuple[str, int | None]:
        """The node behind a logical host and the CPUs the job holds there."""
        assert self.lease is not None
        node = self.lease.hosts[host]
        for resource in self.lease.resources:
            if resource.get("node") == node and resource.get("cpus", "").isdigit():
                return node, int(resource["cpus"])
        return node, None
