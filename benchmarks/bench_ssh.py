"""SSH backend speed: 1,000 trials of ``true`` on 3 loopback sshd hosts.

Three figures, run side by side in this one script on servers it starts itself:
  benchlang over SSH  - the executor and the ssh backend (one persistent connection and one
                        agent per host, every trial committed to a SQLite store);
  ssh per trial       - the same trials issued as one ``ssh host true`` per trial, one
                        sequential stream per host, the three hosts at once (how OrderSage's
                        controller drives its workers);
  benchlang local     - the same trials on this machine through the local backend.
Targets (issue 6): benchlang over SSH at least 10x faster than ssh per trial, and within 3x of
benchlang local.

    python benchmarks/bench_ssh.py [--trials 1000] [--baseline-trials N]

``--baseline-trials`` times fewer ssh-per-trial trials and scales the time to ``--trials``
(each ssh invocation is independent, so its cost is linear); the default runs all of them.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from benchlang.backends.local import LocalBackend
from benchlang.backends.ssh import SshBackend
from benchlang.lang.check import load
from benchlang.plan.compile import compile_plan
from benchlang.run.executor import Executor
from benchlang.run.progress import Progress
from benchlang.run.store import Store
from benchlang.testing.sshd import Testbed, sshd_missing

SPEC = """benchlang 1
experiment speed {{
  seed 1
  benchmark nothing {{ run "true" }}
  design {{ runs {trials} series 1 order fixed }}
}}
"""


def through_benchlang(root: Path, trials: int, backend) -> tuple[float, int]:
    """Seconds to run every trial of the spec through the executor, and how many ran ok."""
    spec = root / f"speed-{backend.__class__.__name__}.bench"
    spec.write_text(SPEC.format(trials=trials))
    experiment = load(str(spec))
    plan = compile_plan(experiment, backend.hosts())
    with Store(root / f"{spec.stem}.sqlite", create=True) as store:
        store.add_plan(
            plan.hash, experiment.name, experiment.spec_hash, plan.seed, plan.json_text()
        )
        executor = Executor(experiment, plan, backend, store, Progress(plan.n_trials, quiet=True))
        t0 = time.perf_counter()
        summary = asyncio.run(executor.run())
        elapsed = time.perf_counter() - t0
    return elapsed, summary.ran - summary.failed


def ssh_per_trial(bed: Testbed, trials: int) -> tuple[float, int]:
    """Seconds for ``trials`` OpenSSH invocations, one stream per host, hosts in parallel."""
    shares = [
        trials // len(bed.servers) + (i < trials % len(bed.servers))
        for i in range(len(bed.servers))
    ]
    ok = [0] * len(shares)

    def stream(i: int) -> None:
        argv = [*bed.ssh_argv(bed.servers[i]), "true"]
        for _ in range(shares[i]):
            ok[i] += subprocess.run(argv, stdin=subprocess.DEVNULL).returncode == 0

    threads = [threading.Thread(target=stream, args=(i,)) for i in range(len(shares))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - t0, sum(ok)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument(
        "--baseline-trials",
        type=int,
        help="ssh-per-trial trials actually timed (default: --trials)",
    )
    args = parser.parse_args()
    why = sshd_missing()
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
        return 2
    baseline_trials = args.baseline_trials or args.trials
    with tempfile.TemporaryDirectory(prefix="bench-ssh-") as tmp:
        root = Path(tmp)
        bed = Testbed(root / "sshd", 3)
        try:
            ssh = SshBackend.from_settings(
                {
                    "nodes": tuple(bed.nodes),
                    "identity": str(bed.identity),
                    "known_hosts": str(bed.known_hosts),
                    "workdir": str(root / "work"),
                },
                root,
            )
            ssh_time, ssh_ok = through_benchlang(root, args.trials, ssh)
            local_time, local_ok = through_benchlang(root, args.trials, LocalBackend(root))
            base_time, base_ok = ssh_per_trial(bed, baseline_trials)
        finally:
            bed.close()
    base_scaled = base_time * args.trials / baseline_trials
    rows = [
        ("benchlang over ssh (3 hosts)", ssh_time, ssh_ok, args.trials),
        ("ssh per trial (3 hosts)", base_time, base_ok, baseline_trials),
        ("benchlang local", local_time, local_ok, args.trials),
    ]
    print(f"{args.trials} trials of `true`")
    print(f"{'':32} {'seconds':>9} {'trials ok':>10} {'ms/trial':>9}")
    for name, seconds, ok, n in rows:
        print(f"{name:32} {seconds:9.2f} {ok:>6}/{n:<4} {1000 * seconds / n:8.2f}")
    if baseline_trials != args.trials:
        print(f"ssh per trial scaled to {args.trials} trials: {base_scaled:.1f}s")
    speedup = base_scaled / ssh_time
    vs_local = ssh_time / local_time
    print(
        f"benchlang over ssh vs ssh per trial: {speedup:.1f}x faster  (target >= 10x: {'met' if speedup >= 10 else 'MISSED'})"
    )
    print(
        f"benchlang over ssh vs benchlang local: {vs_local:.2f}x the time  (target <= 3x: {'met' if vs_local <= 3 else 'MISSED'})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
