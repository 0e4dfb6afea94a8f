"""The fixed cost of ``benchlang run``: start-up, loading and planning the spec, opening the
store, the closing report (results, KPI, record): everything except running the trials.

A tiny spec runs ``true`` a few times; its wall time minus the trials' own floor (one
``true`` spawn each, timed by ``hyperfine -N --runs 1 true``) is the fixed cost. Target:
under 0.5 s. Then ``-X importtime`` names the largest imports of a run, the usual culprits.

    python benchmarks/bench_run_fixed_cost.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET = 0.5
TRIALS = 5
SPEC = f"""benchlang 1
experiment fixed_cost {{
  seed 1
  benchmark noop {{
    run "true"
    measure time = wall_time
  }}
  metric time {{ measure mean unit "s" better lower }}
  kpi time {{ percentile 50 confidence 95% }}
  design {{ runs {TRIALS} }}
}}
"""


def true_floor() -> float:
    """Seconds to spawn and wait for ``true`` once (hyperfine's own measurement)."""
    if not shutil.which("hyperfine"):
        t0 = time.perf_counter()
        subprocess.run(["true"], check=True)
        return time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "true.json"
        subprocess.run(
            [
                "hyperfine",
                "-N",
                "--runs",
                "1",
                "--style",
                "none",
                "--export-json",
                str(export),
                "true",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return json.loads(export.read_text())["results"][0]["mean"]


def run_once(spec: Path, store: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store), "--quiet"],
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"benchlang run failed ({done.returncode}):\n{done.stderr}")
    return elapsed


def largest_imports(spec: Path, store: Path, top: int = 8) -> list[tuple[float, str]]:
    """Packages of a run by import time (ms): each module's own time, summed per package."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "benchlang",
            "run",
            str(spec),
            "--store",
            str(store),
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    totals: dict[str, float] = {}
    for line in done.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \| \s*(\S+)", line)
        if m:
            parts = m.group(2).split(".")
            name = ".".join(parts[:2]) if parts[0] == "benchlang" else parts[0]
            totals[name] = totals.get(name, 0.0) + int(m.group(1)) / 1e3
    return sorted(((ms, name) for name, ms in totals.items()), reverse=True)[:top]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "fixed_cost.bench"
        spec.write_text(SPEC)
        walls = [run_once(spec, Path(tmp) / f"s{i}.sqlite") for i in range(args.repeat + 1)][1:]
        floor = true_floor()
        wall = statistics.median(walls)
        fixed = wall - TRIALS * floor
        print(
            f"benchlang run, {TRIALS} trials of 'true': median {wall * 1e3:.0f} ms over "
            f"{args.repeat} runs (min {min(walls) * 1e3:.0f}, max {max(walls) * 1e3:.0f})"
        )
        print(f"floor per trial (hyperfine -N --runs 1 true): {floor * 1e3:.2f} ms")
        verdict = "meets" if fixed <= TARGET else "misses"
        print(f"fixed cost: {fixed * 1e3:.0f} ms ({verdict} the {TARGET * 1e3:.0f} ms target)")
        print("largest imports of a run (cumulative ms):")
        for ms, name in largest_imports(spec, Path(tmp) / "importtime.sqlite"):
            print(f"  {ms:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    # As installed, a package's bytecode is cached: without it every command compiles
    # benchlang's sources again (0.2 s), which no user pays. The cache goes to a private
    # prefix so that the tree stays clean; the warm-up run writes it.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", tempfile.mkdtemp(prefix="benchlang-pycache-"))
    raise SystemExit(main())
