"""Compile a 1,000,000-trial factorial plan, content hash included: time and peak memory.

Each case runs in a fresh subprocess so that its peak resident size (ru_maxrss) is its own.
Targets (issue 2): under 3 s and under 1 GB. Baseline, side by side: a naive pure-Python
plan of the same trials (a tuple per trial, random.shuffle per round, json + sha256).

    python benchmarks/bench_plan.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

TIME_TARGET = 3.0
MEMORY_TARGET_MIB = 1024.0

SPEC = """benchlang 1
experiment big {{
  seed 1
  factor a in 1..{a}
  factor b in 1..{b}
  factor c in 1..{c}
  benchmark k {{ run "work --a {{a}} --b {{b}} --c {{c}}" }}
  design {{ runs {runs} order random }}
}}
"""

BENCHLANG = """
import json, resource, sys, time
from benchlang.lang.check import compile_source
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan
text = sys.stdin.read()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
experiment = compile_source(decode("big.bench", text.encode()))
t1 = time.perf_counter()
plan = compile_plan(experiment)
t2 = time.perf_counter()
digest = plan.hash
t3 = time.perf_counter()
print(json.dumps({"check": t1 - t0, "compile": t2 - t1, "hash": t3 - t2, "total": t3 - t0,
                  "trials": plan.n_trials, "configurations": len(plan.configurations),
                  "json_mb": len(plan.canonical_json) / 1e6, "rss_before_mib": rss0,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

NAIVE = """
import hashlib, itertools, json, random, resource, sys, time
a, b, c, runs = map(int, sys.argv[1:])
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t0 = time.perf_counter()
configs = [f"work --a {x} --b {y} --c {z}" for x, y, z in itertools.product(range(1, a + 1), range(1, b + 1), range(1, c + 1))]
rng = random.Random(1)
trials = []
order = list(range(len(configs)))
for r in range(runs):
    rng.shuffle(order)
    trials.extend((r, p, i, rng.getrandbits(31)) for p, i in enumerate(order))
text = json.dumps({"configurations": configs, "trials": trials}, separators=(",", ":"))
digest = hashlib.sha256(text.encode()).hexdigest()
t1 = time.perf_counter()
print(json.dumps({"total": t1 - t0, "trials": len(trials), "json_mb": len(text) / 1e6, "rss_before_mib": rss0,
                  "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def run(code: str, stdin: str = "", args: tuple[int, ...] = ()) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", code, *map(str, args)],
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def case(title: str, a: int, b: int, c: int, runs: int, targets: bool) -> None:
    ours = run(BENCHLANG, SPEC.format(a=a, b=b, c=c, runs=runs))
    naive = run(NAIVE, args=(a, b, c, runs))
    print(
        f"\n{title}: {a} x {b} x {c} levels = {ours['configurations']} configurations, runs {runs}, {ours['trials']:,} trials"
    )
    print(
        f"  benchlang: check {ours['check']:.2f} s + compile {ours['compile']:.2f} s + hash {ours['hash']:.2f} s = {ours['total']:.2f} s"
        f"   (plan JSON {ours['json_mb']:.0f} MB)"
    )
    print(
        f"             peak RSS {ours['peak_mib']:.0f} MiB (of which {ours['rss_before_mib']:.0f} MiB is the interpreter and imports)"
    )
    print(
        f"  baseline (naive pure-Python plan + json + sha256): {naive['total']:.2f} s, peak RSS {naive['peak_mib']:.0f} MiB"
    )
    print(
        f"  ratio benchlang / baseline: time {ours['total'] / naive['total']:.2f}x, memory {ours['peak_mib'] / naive['peak_mib']:.2f}x"
    )
    if targets:
        time_ok = "ok" if ours["total"] < TIME_TARGET else "MISSED"
        mem_ok = "ok" if ours["peak_mib"] < MEMORY_TARGET_MIB else "MISSED"
        print(f"  target: < {TIME_TARGET:g} s: {time_ok}; < {MEMORY_TARGET_MIB:.0f} MiB: {mem_ok}")


def main() -> None:
    print(textwrap.dedent(__doc__).strip().splitlines()[0])
    case("target case", 10, 10, 100, 100, targets=True)
    case("for information", 100, 100, 100, 1, targets=False)


if __name__ == "__main__":
    main()
