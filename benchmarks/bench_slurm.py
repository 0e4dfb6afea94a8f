"""Per-trial overhead through Slurm against the local runner, side by side.

On a one-node Slurm cluster this script starts itself (benchlang/testing/slurm.py: Debian's
munged, slurmctld, slurmd; needs root and the slurm-wlm and munge packages), it times:
  benchlang local      - N trials of ``true`` through the executor and the local backend;
  benchlang slurm      - the same N trials through ``hosts slurm`` (each trial a job step
                         running benchlang's agent, every trial committed to the store);
  srun per trial       - N bare ``srun --jobid=J true`` one after the other: Slurm's own
                         floor for starting a job step;
and the allocation (sbatch holder until RUNNING) and its release (scancel). It prints the
per-trial cost of each and the overhead of slurm over local per trial.

    python benchmarks/bench_slurm.py [--trials 200]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlang.app.plan import build_plan
from benchlang.run.executor import Executor
from benchlang.run.progress import Progress
from benchlang.run.store import Store
from benchlang.testing.slurm import SlurmCluster, slurm_missing

SPEC = """benchlang 1
experiment speed {{
  seed 1
  {hosts}
  benchmark nothing {{ run "true" }}
  design {{ runs {trials} series 1 order fixed }}
}}
"""


def through_benchlang(root: Path, name: str, hosts: str, trials: int) -> dict[str, float]:
    """One run (the executor acquires and releases the allocation), timed from the store:
    ``trials`` = first trial started to last trial ended; ``acquire`` = run start to the
    lease stored (sbatch, the job RUNNING); ``after`` = last trial ended to the run returned
    (scancel and waiting for the job to end, or nothing for local)."""
    spec = root / f"{name}.bench"
    spec.write_text(SPEC.format(hosts=hosts, trials=trials))
    experiment, backend, plan = build_plan(str(spec))
    with Store(root / f"{name}.sqlite", create=True) as store:
        store.add_plan(
            plan.hash, experiment.name, experiment.spec_hash, plan.seed, plan.json_text()
        )
        executor = Executor(experiment, plan, backend, store, Progress(plan.n_trials, quiet=True))
        t0 = time.time()
        summary = asyncio.run(executor.run())
        t1 = time.time()
        first, last = store.db.execute(
            "SELECT min(started), max(ended) FROM trials WHERE plan_hash = ?", (plan.hash,)
        ).fetchone()
        acquired = store.db.execute(
            "SELECT min(acquired) FROM leases WHERE plan_hash = ?", (plan.hash,)
        ).fetchone()[0]
    return {
        "ok": summary.ran - summary.failed,
        "run": last - first,
        "acquire": acquired - t0 if acquired else float("nan"),
        "after": t1 - last,
    }


def srun_per_trial(cluster: SlurmCluster, trials: int) -> float:
    """Seconds for ``trials`` bare job steps of ``true`` in one holder allocation."""
    job = cluster.run(
        "sbatch",
        "--parsable",
        "--no-requeue",
        "--output=/dev/null",
        "--chdir=/tmp",
        "--wrap=exec sleep infinity",
    ).stdout.strip()
    try:
        while "RUNNING" not in cluster.run("squeue", "-h", "-j", job, "-o", "%T").stdout:
            time.sleep(0.05)
        argv = [
            "srun",
            f"--jobid={job}",
            "--nodes=1",
            "--ntasks=1",
            "--exclusive",
            "--quiet",
            "true",
        ]
        t0 = time.perf_counter()
        for _ in range(trials):
            subprocess.run(argv, env=cluster.env, check=True, stdin=subprocess.DEVNULL)
        return time.perf_counter() - t0
    finally:
        cluster.run("scancel", job)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    args = parser.parse_args()
    missing = slurm_missing()
    if missing:
        print(f"cannot run: {missing}", file=sys.stderr)
        return 2
    n = args.trials
    with tempfile.TemporaryDirectory(prefix="bench-slurm-") as tmp, SlurmCluster() as cluster:
        os.environ["SLURM_CONF"] = str(cluster.conf)
        root = Path(tmp)
        local = through_benchlang(root, "local", "", n)
        slurm = through_benchlang(root, "slurm", "hosts slurm { nodes 1 time 30m }", n)
        floor = srun_per_trial(cluster, n)
    ms = 1000.0 / n
    print(f"{n} trials of `true` on a one-node Slurm cluster ({cluster.node})")
    print(
        f"  benchlang local : {local['run']:7.2f} s  {local['run'] * ms:7.1f} ms/trial  ok {local['ok']:.0f}"
    )
    print(
        f"  benchlang slurm : {slurm['run']:7.2f} s  {slurm['run'] * ms:7.1f} ms/trial  ok {slurm['ok']:.0f}"
    )
    print(f"  srun per trial  : {floor:7.2f} s  {floor * ms:7.1f} ms/trial  (Slurm's floor)")
    print(
        f"  allocation: acquire {slurm['acquire']:.2f} s (sbatch to lease stored), "
        f"after the last trial {slurm['after']:.2f} s (release: scancel, job ended)"
    )
    print(
        f"  slurm over local: +{(slurm['run'] - local['run']) * ms:.1f} ms/trial "
        f"({slurm['run'] / local['run']:.1f}x); over bare srun: "
        f"+{(slurm['run'] - floor) * ms:.1f} ms/trial ({slurm['run'] / floor:.2f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
