"""The machine block on hosts slurm (docs/machine.md): the allocation is sized from it (named CPUs take
the node whole with --exclusive, a memory limit asks --mem of the limit plus the agent's
share) and the agent in each job step applies the limits, which ``srun --cpu-bind`` could not
under the test cluster's ``TaskPlugin=task/none``: ``Cpus_allowed_list`` 0 read inside the
trial, 256 MiB out of memory under 64 MiB, 16 MiB's peak stored."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from benchlang_slurm import SlurmBackend
from benchlang_slurm.backend import AGENT_MEMORY
from benchlang_slurm.settings import parse

from benchlang.app.plan import build_plan
from benchlang.model import Machine
from benchlang.run.executor import Executor
from benchlang.run.progress import Progress
from benchlang.run.store import Store

MIB = 2**20
AFFINITY = (
    "sh -c 'grep Cpus_allowed_list /proc/$$/status; grep Cpus_allowed_list /proc/self/status'"
)
ALLOCATE = "python3 -c \\\"b = bytearray({mib} << 20); b[::4096] = b'x' * len(b[::4096])\\\""


def test_the_allocation_is_sized_from_the_machine_block():
    memory = SlurmBackend(parse({"nodes": 1}), "/tmp")
    memory.size_allocation({"node0": Machine(memory=64 * MIB)})
    options = memory.settings.sbatch_options()
    assert f"--mem={(64 * MIB + AGENT_MEMORY) // MIB}M" in options
    assert "--exclusive" not in options
    pinned = SlurmBackend(parse({"nodes": 1}), "/tmp")
    pinned.size_allocation({"node0": Machine(cpus=(0,), memory=64 * MIB)})
    options = pinned.settings.sbatch_options()
    assert "--exclusive" in options and "--mem=0" in options  # the whole node, its memory too
    assert not any(o.startswith("--mem=") and o != "--mem=0" for o in options)
    plain = SlurmBackend(parse({"nodes": 1}), "/tmp")
    plain.size_allocation({"node0": None})
    assert plain.settings == parse({"nodes": 1})


def test_cpus_and_memory_apply_in_every_job_step(idle_cluster, tmp_path: Path):
    spec = tmp_path / "slurm.bench"
    spec.write_text(
        "benchlang 1\nexperiment slurmlimits {\n"
        "  hosts slurm { nodes 1 time 10m }\n"
        "  machine { cpus [0] memory 64MiB }\n"
        "  factor mib in [16, 256]\n"
        f'  benchmark alloc {{ run "{ALLOCATE.format(mib="{mib}")}" measure peak = memory_peak }}\n'
        f'  benchmark cpus_seen {{ run "{AFFINITY}" }}\n'
        "  design { runs 1 series 1 order fixed }\n}\n"
    )
    experiment, backend, plan = build_plan(str(spec))
    store = Store(tmp_path / "results.sqlite", create=True)
    store.add_plan(
        plan.hash, experiment.name, experiment.spec_hash, plan.seed, plan.json_text(), str(spec), ""
    )
    executor = Executor(
        experiment, plan, backend, store, Progress(plan.n_trials, stream=io.StringIO())
    )
    summary = asyncio.run(executor.run())
    rows = {
        label: (trial, status, reason, stdout)
        for trial, label, status, reason, stdout in store.db.execute(
            "SELECT trial, label, status, reason, stdout_tail FROM trials"
        )
    }
    peaks = dict(store.db.execute("SELECT trial, value FROM measures WHERE name = 'peak'"))
    store.close()
    assert backend.settings.exclusive, "named CPUs take the node whole"
    assert summary.failed == 1, rows
    assert rows["alloc[mib=256]"][2] == "the command failed: out of memory (limit 64 MiB)"
    trial, status, _, _ = rows["alloc[mib=16]"]
    assert status == "ok" and 16 * 1024 <= peaks[trial] <= 64 * 1024
    _, status, _, stdout = rows["cpus_seen"]
    assert status == "ok" and stdout.decode().split() == ["Cpus_allowed_list:", "0"] * 2
    assert idle_cluster.jobs() == []
