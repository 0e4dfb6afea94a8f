"""Calibration of the A/B comparisons on real CPU noise: how often a known 5% slowdown is
detected, and how often an A/A comparison (identical versions) is flagged, against the nominal
alpha of the interval.

This is what tests/test_ab_e2e.py and tests/test_ab_layout_e2e.py asserted before they moved to
seeded synthetic values (docs/testing.md): the same experiments, with real commands whose CPU
time is the metric, run through `benchlang run` / `benchlang analyze` several times. On a busy
machine the rates move; that is the point of measuring them here rather than asserting them
in a test.

Two experiments, each run --repeats times as A/B (treatment does 1.05x the work) and as A/A:

- factorial: `factor impl in [control, treatment]` x 12 inputs, 6 runs, random order, an awk
  busy loop, `compare cpu by impl with bootstrap { cluster request log true }`;
- layout: a fully balanced layout on 4 local worker slots, slots 2k and 2k+1 pinned with taskset
  to core k (docs/ab-designs.md, "Local worker slots"), 20 requests x 3 repetitions, 2 warm-up
  and 1 cool-down trials per batch; the bootstrap and the mixed-effects fit.

Run: python benchmarks/bench_ab_calibration.py [--repeats 5] [--only factorial|layout]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FACTORIAL = """benchlang 1
experiment ab {{
  seed {seed}
  factor impl in ["control", "treatment"]
  factor input in 1000000..2100000 step 100000
  benchmark work {{
    run "awk -v n={{input}} -v f={{impl}} 'BEGIN {{{{ m = (f == \\"treatment\\") ? {factor} : 1.0; for (i = 0; i < n * m; i++) s += i }}}}'"
    measure cpu = cpu_time
  }}
  metric cpu {{ better lower }}
  design {{ runs 6 order random }}
  analysis {{
    compare cpu by impl with bootstrap {{ cluster request replicates 4000 log true confidence {confidence}% }}
  }}
}}
"""

LAYOUT = """benchlang 1
experiment ab_layout {{
  seed {seed}
  hosts local {{ slots 4 }}
  reset "true"
  benchmark loop {{
    run "taskset -c $(( ${{{{BENCHLANG_HOST#local:}}}} / 2 )) awk -v n={{request}} -v work={{version}} 'BEGIN {{{{ for (i = 0; i < n * work; i++) s += i }}}}'"
    measure cpu = cpu_time
  }}
  metric cpu {{ unit "s" better lower }}
  design {{
    versions {{ control "1.00" treatment "{factor}" }}
    layout fully_balanced {{ hosts 4 requests 20 repetitions 3 warmup 2 cooldown 1 }}
    requests [{pool}]
  }}
  analysis {{
    compare cpu by version with bootstrap {{ cluster request log true replicates 4000 confidence {confidence}% }}
    compare cpu by version with mixed_effects
  }}
}}
"""
POOL = ", ".join(str(1_800_000 + 20_000 * i) for i in range(20))


def benchlang(args: list[str], cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if done.returncode not in (0,):
        raise SystemExit(f"benchlang {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def one_run(kind: str, factor: str, confidence: int, seed: int, base: Path) -> dict:
    work = base / f"{kind}-{factor}-{seed}"
    work.mkdir()
    text = (FACTORIAL if kind == "factorial" else LAYOUT).format(
        seed=seed, factor=factor, confidence=confidence, pool=POOL
    )
    (work / "ab.bench").write_text(text)
    t0 = time.monotonic()
    benchlang(["run", "ab.bench", "--store", "ab.sqlite", "-q"], work)
    seconds = time.monotonic() - t0
    analysis = json.loads(
        benchlang(["analyze", "ab.bench", "--store", "ab.sqlite", "--json"], work)
    )
    out = {"seconds": seconds}
    for c in analysis["comparisons"]:
        if c.get("bootstrap"):
            b = c["bootstrap"]
            out["effect"] = math.expm1(b["estimate"])
            out["low"], out["high"] = math.expm1(b["ci_low"]), math.expm1(b["ci_high"])
            out["flagged"] = bool(b["significant"])
        if c.get("mixed_effects"):
            m = c["mixed_effects"]
            out["mixed_z"] = m["effect"] / m["effect_se"] if m.get("effect_se") else float("nan")
    return out


def summarise(kind: str, label: str, runs: list[dict], confidence: int) -> None:
    flagged = sum(r["flagged"] for r in runs)
    effects = [r["effect"] for r in runs]
    rate = f"{flagged / len(runs):.0%}" + (
        f" against a nominal alpha of {100 - confidence}%" if label == "A/A" else " detected"
    )
    effects_text = f"{min(effects):+.2%} .. {max(effects):+.2%}"
    seconds = sum(r["seconds"] for r in runs) / len(runs)
    print(
        f"{kind:9s} {label} at {confidence}%: flagged {flagged}/{len(runs)} ({rate}),"
        f" effect {effects_text}, {seconds:.1f} s per run"
    )
    for r in runs:
        mixed = f", mixed z {r['mixed_z']:+.2f}" if "mixed_z" in r else ""
        print(f"    {r['effect']:+.2%} [{r['low']:+.2%}, {r['high']:+.2%}]{mixed}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", choices=("factorial", "layout"))
    args = parser.parse_args()
    kinds = [args.only] if args.only else ["factorial", "layout"]
    if "layout" in kinds and (
        shutil.which("taskset") is None or not {0, 1} <= os.sched_getaffinity(0)
    ):
        print("layout: skipped (needs taskset and CPUs 0 and 1)")
        kinds.remove("layout")
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; {args.repeats} runs each")
    with tempfile.TemporaryDirectory(prefix="bench_ab_calibration-") as tmp:
        base = Path(tmp)
        for kind in kinds:
            ab = [one_run(kind, "1.05", 95, 100 + i, base) for i in range(args.repeats)]
            summarise(kind, "A/B", ab, 95)
            print(
                f"    detection rate of a 5% slowdown: {sum(r['flagged'] for r in ab) / len(ab):.0%}"
            )
            aa = [one_run(kind, "1.00", 99, 200 + i, base) for i in range(args.repeats)]
            summarise(kind, "A/A", aa, 99)


if __name__ == "__main__":
    main()
