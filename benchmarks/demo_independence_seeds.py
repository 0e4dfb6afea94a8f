"""The run-level independence verdict through the real CLI, on 20 seeds i.i.d. and 20 drifting.

Issue 35, item 1 (its "Done when"). A quickstart-shaped spec (3 configurations, ``runs auto``,
``series auto``, p50 at 95%, variability p25 at 75%, ``order random``: 75 trials) whose command
prints a lognormal value (sigma 0.1) drawn from the trial's own ``BENCHLANG_SEED`` (awk's
``srand``), times (1 + d BENCHLANG_TRIAL / 75): d = 0 gives independent values, d = 0.25 a
machine that slows by 25% over the run. For every seed ``benchlang run --seed S`` runs it and
we count the runs whose output says DESCRIPTIVE ONLY for independence ("after"); "before"
counts, on the same stored trials, the runs that TriScale's per-series rule flags
(``benchlang analyze --per-series-independence --json``: a series' metric values or a
configuration's KPIs not independent).

    python benchmarks/demo_independence_seeds.py [--seeds 20] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

DRAW = """BEGIN {
  srand(s); u = rand(); w = rand()
  if (u <= 0) u = 1e-12
  z = sqrt(-2 * log(u)) * cos(6.283185307179586 * w)
  printf "%.9f\\n", k * exp(0.1 * z) * (1 + d * t / n)
}
"""

SPEC = """benchlang 1

experiment demo {{
  seed 1
  workdir "."
  factor k in [1, 2, 3]
  benchmark draw {{
    run "awk -v s=$BENCHLANG_SEED -v t=$BENCHLANG_TRIAL -v n=75 -v d={drift} -v k={{k}} -f draw.awk"
    measure v from stdout regex "([0-9.]+)"
  }}
  metric v {{ measure mean unit "ms" better lower }}
  kpi v {{ percentile 50 confidence 95% }}
  variability v {{ percentile 25 confidence 75% }}
  design {{
    runs auto
    series auto
    order random
  }}
}}
"""


def one(directory: Path, drift: float, seed: int) -> tuple[bool, bool, str]:
    """(flagged after, flagged before, the run's independence line) of one seeded run."""
    spec = directory / f"demo-{drift:g}.bench"
    store = directory / f"demo-{drift:g}-{seed}.sqlite"
    store.unlink(missing_ok=True)
    run = subprocess.run(
        ["benchlang", "run", str(spec), "--store", str(store), "--seed", str(seed), "-q"],
        capture_output=True,
        text=True,
        check=True,
    )
    verdict = next((x for x in run.stdout.splitlines() if "independen" in x.lower()), "")
    after = "DESCRIPTIVE ONLY" in run.stdout and "not independent" in run.stdout
    analysed = subprocess.run(
        ["benchlang", "analyze", "--store", str(store), "--per-series-independence", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    kpis = json.loads(analysed.stdout)["kpis"]
    before = any(
        "not independent" in reason and ("series" in reason or "variability" in reason)
        for r in kpis
        for reason in r["reasons"]
        if not reason.startswith("not independent")
    )
    return after, before, verdict.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--keep", help="directory for the specs and stores (default: temporary)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(args.keep or tmp)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "draw.awk").write_text(DRAW)
        for drift in (0.0, 0.25):
            (directory / f"demo-{drift:g}.bench").write_text(SPEC.format(drift=drift))
        print("| values | seeds | before: per-series rule flags | after: run-level flags |")
        print("| --- | ---: | ---: | ---: |")
        for drift, name in ((0.0, "i.i.d."), (0.25, "drift 25%")):
            after = before = 0
            for seed in range(1, args.seeds + 1):
                a, b, line = one(directory, drift, seed)
                after += a
                before += b
                print(f"  {name} seed {seed}: {line}", file=sys.stderr, flush=True)
            print(f"| {name} | {args.seeds} | {before} | {after} |", flush=True)


if __name__ == "__main__":
    main()
