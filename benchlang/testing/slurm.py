"""A throwaway one-node Slurm cluster on this machine, for tests and benchmarks only (not used
by benchlang runs).

Debian's ``munged``, ``slurmctld`` and ``slurmd`` (packages ``munge`` and ``slurm-wlm``) run in
the foreground, each started here and stopped here by its PID, with every file they write in
one temporary directory: a generated munge key and socket, ``slurm.conf`` (``NodeName`` =
``hostname -s``, ``ProctrackType=proctrack/linuxproc``, ``TaskPlugin=task/none``, no
accounting, ports picked free), the spool, the state and the logs. Clients find the cluster
through ``SLURM_CONF`` (``cluster.env``). About a second to come up on an idle machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

MUNGED = "/usr/sbin/munged"
SLURMCTLD = "/usr/sbin/slurmctld"
SLURMD = "/usr/sbin/slurmd"
CLIENTS = ("sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo")
FEATURES = ("benchlang", "testnode")
"""The node's features (``constraint "benchlang"`` selects it)."""


def slurm_missing() -> str | None:
    """Why no cluster can start here, or None."""
    for daemon in (MUNGED, SLURMCTLD, SLURMD):
        if not os.access(daemon, os.X_OK):
            package = "munge" if daemon == MUNGED else "slurm-wlm"
            return f"{daemon} is not installed (Debian: apt-get install {package})"
    for client in CLIENTS:
        if shutil.which(client) is None:
            return f"{client} is not installed (Debian: apt-get install slurm-wlm)"
    if os.geteuid() != 0:
        return "slurmd must run as root to start job steps; the one-node cluster needs root"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mib() -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return max(1, int(line.split()[1]) // 1024 * 9 // 10)
    return 1


class SlurmCluster:
    """munged + slurmctld + slurmd for one node named ``hostname -s``, or with ``nodes=N``
    one slurmd per node ``HOST-0..HOST-N-1``, all on this machine (Debian's Slurm is built
    with multiple-slurmd support: each node has its own port and spool directory).

    ``start()`` returns once every node is idle; ``stop()`` cancels the cluster's jobs and
    stops the daemons it started (SIGTERM, then SIGKILL), nothing else.
    """

    def __init__(self, root: str | Path | None = None, nodes: int = 1) -> None:
        # Short paths: the munge socket and slurmd's step sockets live here (108-byte limit).
        self.root = Path(tempfile.mkdtemp(prefix="bl-slurm-", dir=root or "/tmp"))
        self.host = socket.gethostname().split(".")[0]
        self.nodes = (self.host,) if nodes == 1 else tuple(f"{self.host}-{i}" for i in range(nodes))
        self.node = self.nodes[0]
        self.conf = self.root / "slurm.conf"
        self.socket = self.root / "munge" / "munge.socket"
        self.procs: dict[str, subprocess.Popen] = {}
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}

    def _write_config(self) -> None:
        munge = self.root / "munge"
        munge.mkdir(mode=0o755)
        key = munge / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        for name in ("spool", "state"):
            (self.root / name).mkdir(mode=0o755)
        r = self.root
        many = len(self.nodes) > 1
        if many:
            for node in self.nodes:
                (r / "spool" / node).mkdir(mode=0o755)
        cpus, memory = os.cpu_count() or 1, _memory_mib()
        lines = [
            "ClusterName=benchlang-test",
            f"SlurmctldHost={self.host}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.socket}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool' / ('%n' if many else '')}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / ('slurmd-%n.pid' if many else 'slurmd.pid')}",
            f"SlurmctldLogFile={r / 'slurmctld.log'}",
            f"SlurmdLogFile={r / ('slurmd-%n.log' if many else 'slurmd.log')}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "MpiDefault=none",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=batch_sched_delay=0",  # start a submitted job at once (~1 s)
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_CPU",
            "ReturnToService=2",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "JobCompType=jobcomp/none",
            "InactiveLimit=0",
            "KillWait=2",
            "MinJobAge=300",
            *(
                f"NodeName={node} NodeHostname={self.host} NodeAddr=127.0.0.1"
                + (f" Port={_free_port()}" if many else "")
                + f" CPUs={cpus} RealMemory={memory} Feature={','.join(self.features(node))}"
                + " State=UNKNOWN"
                for node in self.nodes
            ),
            "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
        self.conf.write_text("\n".join(lines))

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.root / f"{name}.out").open("ab")
        self.procs[name] = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=self.env
        )
        log.close()

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with status {proc.returncode}: {self.log(name)}")

    def log(self, name: str) -> str:
        """The tail of a daemon's output and log file."""
        texts = []
        for path in (self.root / f"{name}.out", self.root / f"{name}.log"):
            with contextlib.suppress(OSError):
                texts.append(path.read_text(errors="replace")[-1500:])
        return "\n".join(texts)

    def run(self, *argv: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster."""
        return subprocess.run(
            argv, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def start(self, timeout: float = 60.0) -> SlurmCluster:
        """Start the daemons; if the node is not idle within ``timeout`` (or anything else
        fails), the daemons already started are stopped before the error propagates."""
        try:
            return self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, timeout: float) -> SlurmCluster:
        self._write_config()
        self._spawn(
            "munged",
            [
                MUNGED,
                "--foreground",
                "--force",
                f"--key-file={self.root / 'munge' / 'munge.key'}",
                f"--socket={self.socket}",
                f"--pid-file={self.root / 'munge' / 'munged.pid'}",
                f"--seed-file={self.root / 'munge' / 'munged.seed'}",
                f"--log-file={self.root / 'munged.log'}",
            ],
        )
        deadline = time.monotonic() + timeout
        while not self.socket.exists():
            self._check_alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"munged did not create its socket: {self.log('munged')}")
            time.sleep(0.02)
        self._spawn("slurmctld", [SLURMCTLD, "-D", "-i", "-f", str(self.conf)])
        for node in self.nodes:
            self._spawn(self._slurmd(node), [SLURMD, "-D", "-N", node, "-f", str(self.conf)])
        while True:
            self._check_alive()
            state = self.run("sinfo", "-h", "-N", "-o", "%N %T", timeout=10.0)
            states = dict(line.split() for line in state.stdout.splitlines() if line.strip())
            if state.returncode == 0 and states == dict.fromkeys(self.nodes, "idle"):
                return self
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"nodes not idle after {timeout:g}s ({state.stdout.strip()} "
                    f"{state.stderr.strip()}): {self.log('slurmctld')}\n"
                    + "\n".join(self.log(self._slurmd(node)) for node in self.nodes)
                )
            time.sleep(0.1)

    def features(self, node: str) -> tuple[str, ...]:
        """A node's features: ``FEATURES``, and with several nodes ``rackI`` for node I (so
        nodes differ in one feature, a hardware factor's levels)."""
        if len(self.nodes) == 1:
            return FEATURES
        return (*FEATURES, f"rack{self.nodes.index(node)}")

    def _slurmd(self, node: str) -> str:
        """The name of a node's slurmd (its ``.out`` and ``.log`` file names)."""
        return f"slurmd-{node}" if len(self.nodes) > 1 else "slurmd"

    def jobs(self) -> list[str]:
        """The ids of the jobs the cluster still knows as pending or running."""
        listed = self.run(
            "squeue", "-h", "-t", "PENDING,CONFIGURING,RUNNING,SUSPENDED", "-o", "%i", timeout=10.0
        )
        return listed.stdout.split() if listed.returncode == 0 else []

    def stop(self) -> None:
        """Cancel every job of this cluster, then stop the daemons started here, by PID."""
        if self.procs.get("slurmctld") and self.procs["slurmctld"].poll() is None:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                jobs = self.jobs()
                if jobs:
                    self.run("scancel", *jobs, timeout=10.0)
                    deadline = time.monotonic() + 10.0
                    while self.jobs() and time.monotonic() < deadline:
                        time.sleep(0.1)
        for name in (*map(self._slurmd, self.nodes), "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._kill_leftover_steps()
        shutil.rmtree(self.root, ignore_errors=True)

    def _kill_leftover_steps(self) -> None:
        """SIGKILL the step daemons of this cluster that outlived slurmd (when its jobs could
        not be cancelled, e.g. slurmctld died) and their tasks: the processes holding a
        socket in this cluster's spool directory (slurmstepd's ``NODE_JOB.STEP``), and
        their descendants."""
        spool = f"{self.root / 'spool'}/"
        try:
            lines = Path("/proc/net/unix").read_text().splitlines()[1:]
        except OSError:
            return
        inodes = {
            f"socket:[{f[6]}]"
            for f in map(str.split, lines)
            if len(f) > 7 and f[7].startswith(spool)
        }
        if not inodes:
            return
        parents: dict[int, int] = {}
        steps: set[int] = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
                if any(os.readlink(fd) in inodes for fd in (entry / "fd").iterdir()):
                    steps.add(int(entry.name))
        doomed, frontier = set(steps), set(steps)
        while frontier:
            frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - doomed
            doomed |= frontier
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
