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
    """munged + slurmctld + slurmd for one node named ``hostname -s``.

    ``start()`` returns once the node is idle; ``stop()`` cancels the cluster's jobs and stops
    the three daemons it started (SIGTERM, then SIGKILL), nothing else.
    """

    def __init__(self, root: str | Path | None = None) -> None:
        # Short paths: the munge socket and slurmd's step sockets live here (108-byte limit).
        self.root = Path(tempfile.mkdtemp(prefix="bl-slurm-", dir=root or "/tmp"))
        self.node = socket.gethostname().split(".")[0]
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
        lines = [
            "ClusterName=benchlang-test",
            f"SlurmctldHost={self.node}(127.0.0.1)",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={self.socket}",
            "SlurmUser=root",
            "SlurmdUser=root",
            f"StateSaveLocation={r / 'state'}",
            f"SlurmdSpoolDir={r / 'spool'}",
            f"SlurmctldPidFile={r / 'slurmctld.pid'}",
            f"SlurmdPidFile={r / 'slurmd.pid'}",
            f"SlurmctldLogFile={r / 'slurmctld.log'}",
            f"SlurmdLogFile={r / 'slurmd.log'}",
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
            f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} "
            f"RealMemory={_memory_mib()} Feature={','.join(FEATURES)} State=UNKNOWN",
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
        self._spawn("slurmd", [SLURMD, "-D", "-N", self.node, "-f", str(self.conf)])
        while True:
            self._check_alive()
            state = self.run("sinfo", "-h", "-n", self.node, "-o", "%T", timeout=10.0)
            if state.returncode == 0 and state.stdout.strip() == "idle":
                return self
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"node {self.node} not idle after {timeout:g}s ({state.stdout.strip()} "
                    f"{state.stderr.strip()}): {self.log('slurmctld')}\n{self.log('slurmd')}"
                )
            time.sleep(0.1)

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
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.procs.pop(name, None)
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
