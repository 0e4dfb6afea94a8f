"""One logical host of ``hosts slurm``: every command a job step on its node.

A command runs as ``srun --jobid=JOB --nodelist=NODE --nodes=1 --ntasks=1 --exclusive
--cpus-per-task=C --mem=0 python3 -I -S -u -c AGENT WORKDIR``: benchlang's own agent
(benchlang/backends/ssh_agent.py, the one the ssh backend starts) is the step's task and runs
the command in its own session, kills what it leaves, and measures wall time and rusage with
``wait4`` on the node. The controller talks to it through srun's standard input and output.
The step stays open after the command, so the executor's ``read_file`` of the trial's
measures goes to the same step; the next command closes it first. A step that ends without
answering (cancelled with ``scancel``, its node failed, the job ended) is a ``HostDown``
naming the step and carrying the scheduler's reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Mapping
from typing import Any

from benchlang.backends.agent_protocol import AGENT_SOURCE, agent_execution, exec_request
from benchlang.backends.base import Command, Execution, HostDown
from benchlang_slurm import commands
from benchlang_slurm.commands import SlurmError
from benchlang_slurm.node_target import NodeTarget

PRELUDE = (
    "import json, os, sys\n"
    "sys.stdout.write(json.dumps({'step': '%s.%s' % (os.environ.get('SLURM_JOB_ID', '?'), "
    "os.environ.get('SLURM_STEP_ID', '?')), 'node': os.environ.get('SLURMD_NODENAME', '')})"
    " + '\\n')\n"
    "sys.stdout.flush()\n"
)
"""Run before the agent in each step: says which step and node this is."""
START_TIMEOUT = 300.0
"""Seconds a step may take to start (srun waits while the node's previous step ends)."""
ANSWER_GRACE = 30.0
KILL_GRACE = 5.0
"""Seconds srun has after SIGTERM to end its step before it is SIGKILLed."""
STDERR_KEEP = 16384


class StepLost(Exception):
    """The step ended (or stopped answering) before the agent's answer came."""


class Step:
    """One srun job step running the agent; requests go to it one at a time."""

    def __init__(self, session: SlurmSession, name: str) -> None:
        self.session = session
        self.name = name
        self.id = "?"
        self.workdir = ""
        self.proc: asyncio.subprocess.Process | None = None
        self.stderr = bytearray()
        self._stderr_task: asyncio.Task | None = None

    def argv(self) -> list[str]:
        s = self.session
        target = s.target
        return [
            "srun",
            f"--jobid={s.job}",
            f"--nodelist={s.node}",
            "--nodes=1",
            "--ntasks=1",
            "--exclusive",
            *([f"--cpus-per-task={s.cpus}"] if s.cpus else []),
            "--mem=0",
            f"--job-name={self.name}",
            "--quiet",
            "--unbuffered",  # else srun holds a last line without newline until the step ends
            "--chdir=/tmp",
            target.python,
            "-I",  # isolated: no user site, no PYTHON* variables, no cwd on sys.path
            "-S",  # no site: the agent needs only the standard library (-100 ms a step here)
            "-u",
            "-c",
            PRELUDE + AGENT_SOURCE,
            target.workdir,
        ]

    async def start(self) -> None:
        """srun in a session of its own, so that killing benchlang's process group (SIGKILL,
        a terminal's Ctrl-C) cannot kill srun between creating the step and launching it.
        Such a step exists only in slurmctld, with no slurmstepd on the node: ``scancel``
        reaches no process and slurmd's "no such step" answer counts as done (Slurm 22.05
        step_mgr.c ``_step_signal``, agent.c ``ESLURM_INVALID_JOB_ID``), only srun itself can
        complete it (srun_job.c ``_cancel_steps``), so it holds its CPUs until the job ends and
        a run attaching with ``--resume`` could start no step. Left alone, srun launches the
        step; the agent sees end of input and exits, or srun's write to the dead reader
        (SIGPIPE) kills the task: the step ends by itself (docs/slurm.md)."""
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv(),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(self.session.target.env),
            start_new_session=True,
        )
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())
        first = await self._line(START_TIMEOUT)
        self.id = json.loads(first).get("step", "?")
        hello = json.loads(await self._line(START_TIMEOUT))
        if "agent" not in hello:
            raise HostDown(
                self.session.host,
                f"cannot start the benchlang agent in job step {self.id} ({self.name}) with "
                f"{self.session.target.python}: {hello.get('fatal', hello)}",
            )
        self.workdir = hello["workdir"]

    async def _drain_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(4096):
            self.stderr += chunk
            del self.stderr[:-STDERR_KEEP]

    async def _line(self, timeout: float | None) -> bytes:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        except TimeoutError:
            raise StepLost(f"no answer within {timeout:g}s") from None
        except (OSError, ValueError) as err:
            raise StepLost(str(err)) from None
        if not line.endswith(b"\n"):
            raise StepLost("the step ended")
        return line

    async def request(
        self, request: Mapping[str, Any], timeout: float | None
    ) -> tuple[dict[str, Any], bytes]:
        """Send one request; the answer's header and payload, or StepLost."""
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            await self.proc.stdin.drain()
            try:
                line = await self._line(timeout)
            except StepLost:
                if timeout is None or self.proc.returncode is not None:
                    raise
                self.proc.stdin.write(b'{"op": "kill"}\n')
                line = await self._line(ANSWER_GRACE)
            header = json.loads(line)
            size = sum(int(header.get(k, 0)) for k in ("data", "out", "err"))
            payload = await self.proc.stdout.readexactly(size) if size else b""
        except (OSError, asyncio.IncompleteReadError) as err:
            raise StepLost(f"the step ended ({type(err).__name__})") from None
        return header, payload

    async def close(self, grace: float = 10.0) -> None:
        """End of input: the agent exits and the step ends; killed if it does not."""
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(OSError, RuntimeError):
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            await self.kill()
        if self._stderr_task is not None:
            with contextlib.suppress(TimeoutError, asyncio.CancelledError, OSError):
                await asyncio.wait_for(self._stderr_task, 2.0)

    async def kill(self) -> None:
        """Stop the step now (on cancellation): the agent kills its command at end of input;
        if srun is still there half a second later it gets SIGTERM, which it holds until the
        step is launched and then ends the step's tasks (srun_job.c ``_srun_signal_mgr``);
        SIGKILL, which could leave a created step never launched (``start``), and
        ``scancel`` only when srun outlives SIGTERM by KILL_GRACE seconds."""
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(OSError, RuntimeError):
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.write(b'{"op": "kill"}\n')
                proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 0.5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), KILL_GRACE)
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            if self.id != "?":
                with contextlib.suppress(SlurmError):
                    await commands.cancel(self.id, dict(self.session.target.env), "KILL")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 5.0)
        if self._stderr_task is not None:
            self._stderr_task.cancel()

    def scheduler_lines(self) -> list[str]:
        """What srun and slurmstepd said, without the chdir notices."""
        return [
            line.strip()
            for line in self.stderr.decode(errors="replace").splitlines()
            if line.strip() and "couldn't chdir" not in line
        ]


class SlurmSession:
    """A logical host: job steps on one node of the allocation."""

    def __init__(self, target: NodeTarget) -> None:
        self.target = target
        self.host = target.host
        self.job = target.job
        self.node, self.cpus = target.node, target.cpus
        self.step: Step | None = None
        self.lost: str | None = None
        """Why the last step was lost (what Slurm said then), for the reason a host stops."""

    async def check_job(self) -> dict[str, str]:
        """The job's record; HostDown when it no longer runs."""
        try:
            info = await commands.job(self.job, dict(self.target.env))
        except SlurmError as err:
            raise HostDown(self.host, f"job {self.job}: {err}") from None
        if info is None or info.get("JobState") != "RUNNING":
            raise HostDown(self.host, _job_gone(self.job, info))
        return info

    def _name(self, command: Command | None, what: str = "") -> str:
        trial = command.env.get("BENCHLANG_TRIAL") if command is not None else None
        return f"benchlang-{self.host}-" + (f"trial{trial}" if trial else what or "command")

    async def _start(self, name: str) -> Step:
        await self._end_step()
        step = Step(self, name)
        self.step = step
        try:
            await step.start()
        except StepLost as err:
            raise HostDown(self.host, await self._diagnose(step, f"starting ({err})")) from None
        except BaseException:
            await step.kill()
            self.step = None
            raise
        return step

    async def _end_step(self) -> None:
        step, self.step = self.step, None
        if step is not None:
            await step.close()

    async def _ask(
        self, step: Step, request: Mapping[str, Any], timeout: float | None, what: str
    ) -> tuple[dict[str, Any], bytes]:
        try:
            return await step.request(request, timeout)
        except StepLost as err:
            raise HostDown(self.host, await self._diagnose(step, f"{what} ({err})")) from None
        except BaseException:
            await step.kill()
            if self.step is step:
                self.step = None
            raise

    async def _diagnose(self, step: Step, what: str) -> str:
        """Why a step ended: what srun and slurmstepd said, the job's and node's state."""
        if self.step is step:
            self.step = None
        await step.close(grace=5.0)
        parts = [f"job step {step.id} ({step.name}) on {self.node} ended while {what}"]
        parts += step.scheduler_lines()[-3:]
        env = dict(self.target.env)
        with contextlib.suppress(SlurmError):
            info = await commands.job(self.job, env)
            if info is None or info.get("JobState") != "RUNNING":
                parts.append(_job_gone(self.job, info))
        with contextlib.suppress(SlurmError):
            node = await commands.node(self.node, env)
            if not commands.usable(node.get("State", "")) or node.get("Reason"):
                parts.append(f"node {self.node} is {node.get('State')} ({node.get('Reason')})")
        self.lost = "; ".join(parts)
        return self.lost

    async def execute(self, command: Command) -> Execution:
        step = await self._start(self._name(command))
        started = time.time()
        timeout = None if command.timeout is None else command.timeout + 5.0
        header, payload = await self._ask(step, exec_request(command), timeout, "running")
        return agent_execution(header, payload, started, time.time())

    async def read_file(self, path: str, cwd: str | None = None) -> bytes:
        step = self.step or await self._start(self._name(None, "read"))
        header, payload = await self._ask(
            step, {"op": "read", "path": path, "cwd": cwd}, 60.0, "reading"
        )
        if "errno" in header:
            raise OSError(header["errno"], f"{header['error']} (on {self.node}: {header['path']})")
        return payload

    async def facts(self) -> dict[str, str]:
        """The agent's facts on the node, the node's record, the job's CPUs, the cluster's
        configuration essentials (``scontrol show config``)."""
        step = await self._start(self._name(None, "facts"))
        _header, payload = await self._ask(step, {"op": "facts"}, 60.0, "reading facts")
        await self._end_step()
        facts = json.loads(payload)
        facts["workdir"] = step.workdir
        env = dict(self.target.env)
        try:
            node = await commands.node(self.node, env)
            facts.update(await self.target.config())
        except SlurmError as err:
            raise HostDown(self.host, str(err)) from None
        facts.update(commands.node_facts(self.node, node))
        facts.update({"slurm_job": self.job, "slurm_cpus_allocated": str(self.cpus or "")})
        return {k: str(v) for k, v in facts.items() if v not in ("", None, "(null)")}

    async def reconnect(self, timeout: float) -> None:
        """After a lost step: wait (at most ``timeout`` s) until the job runs and the node
        takes steps again; HostDown at once when the job has ended (its nodes are gone)."""
        await self._end_step()
        deadline = time.monotonic() + timeout
        env = dict(self.target.env)
        pause, why = 0.2, "no answer from Slurm"
        while True:
            try:
                info = await commands.job(self.job, env)
                node = await commands.node(self.node, env)
                if info is None or info.get("JobState") in commands.TERMINAL:
                    why = _job_gone(self.job, info)
                    if node.get("Reason"):
                        why += f"; node {self.node} is {node.get('State')} ({node['Reason']})"
                    raise HostDown(self.host, why)
                if info.get("JobState") == "RUNNING" and self.node not in await commands.hostnames(
                    info.get("NodeList", ""), env
                ):
                    raise HostDown(
                        self.host,
                        f"node {self.node} left job {self.job}, which runs on without it: "
                        + (self.lost or f"node {node.get('State')} ({node.get('Reason')})"),
                    )
                if info.get("JobState") == "RUNNING" and commands.usable(node.get("State", "")):
                    return
                why = f"job {self.job} {info.get('JobState')}, node {self.node} {node.get('State')} ({node.get('Reason')})"
            except SlurmError as err:
                why = str(err)
            if time.monotonic() >= deadline:
                raise HostDown(self.host, f"not back within {timeout:g}s: {why}")
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)

    async def close(self) -> None:
        with contextlib.suppress(OSError, SlurmError):
            await self._end_step()


def _job_gone(job: str, info: Mapping[str, str] | None) -> str:
    if info is None:
        return f"job {job} is gone (Slurm no longer knows it): the allocation ended"
    return (
        f"job {job} is {info.get('JobState')} ({info.get('Reason')}): the allocation ended; "
        "benchlang run --resume acquires a new one"
    )
