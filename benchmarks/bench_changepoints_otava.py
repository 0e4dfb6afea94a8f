"""Change points: benchlang's weighted search against Apache Otava on the same series (issue 30,
item 2; docs/statistics.md "Change points"; docs/benchmarks.md).

Ground truth is generated here, seeded (there is no ``otava-test-data`` package on the
registries): each series has 200 points in commit order; a point is a run of 15 trials with
lognormal noise (sigma 5%, or 20% for one point in five: a busy machine), its KPI the median with
the two-sided 95% interval of order statistics benchlang computes (Thompson; ranks from
``benchlang.stats._orderstat.two_sided_ranks``), times a commit-to-commit lognormal spread of 1%.
Patterns: no change; one step of 1%, 2%, 5%, 10%, 20% at a random place in [40, 160]; three steps
of 5-10% (up or down, at least 30 points apart); a variance change (the trials' sigma doubles at
a random place, the level stays: the one true change is there); a 10% step with 3% of the points
outliers (x1.3-x2, no change of level).

Scoring: a detection within +-K points (K = 5) of a true change matches it (each true change at
most once). Precision = matched detections / detections; recall = matched true changes / true
changes; "series with a false alarm" = share of series with a detection matching nothing (on the
no-change pattern: the false-alarm rate). benchlang gets each point's KPI and interval, Otava
the KPI (its CSV input has no intervals). Otava runs in its own virtual environment, made here
(``python3 -m venv`` + ``pip install apache-otava==0.8.0``; it pins numpy 2.2 and scipy < 1.17,
so never in benchlang's environment), as a subprocess on CSV files, through its Python API
``otava.analysis.compute_change_points`` (the ``otava analyze`` algorithm), at its defaults
(window 50, p 0.001) and at p 0.05. The timing part adds one point to 10,000 (incremental) beside
a full recomputation.

    python benchmarks/bench_changepoints_otava.py [--series 500] [--seed 30] [--skip-otava]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchlang.stats._orderstat import two_sided_ranks
from benchlang.stats.changepoints import detect_changes

N_POINTS, TRIALS, SIGMA, NOISY_SIGMA, NOISY_SHARE, SPREAD, K = 200, 15, 0.05, 0.20, 0.2, 0.01, 5
PATTERNS = (
    "no change",
    "step 1%",
    "step 2%",
    "step 5%",
    "step 10%",
    "step 20%",
    "three steps",
    "variance change",
    "step 10% + outliers",
)
OTAVA = "apache-otava==0.8.0"
OTAVA_SETTINGS = (("Otava (defaults: p 0.001, window 50)", 0.001), ("Otava p 0.05", 0.05))
DRIVER = """
import csv, json, sys
from otava.analysis import compute_change_points
out = []
with open(sys.argv[1]) as f:
    for row in csv.reader(f):
        cps, _ = compute_change_points([float(v) for v in row], window_len=50,
                                       max_pvalue=float(sys.argv[2]), min_magnitude=0.0)
        out.append([int(c.index) for c in cps])
json.dump(out, sys.stdout)
"""


def generate(pattern: str, count: int, rng: np.random.Generator):
    """(values, lower, upper, true change indices per series) for ``count`` series."""
    level = np.zeros((count, N_POINTS))
    sigma = np.where(rng.random((count, N_POINTS)) < NOISY_SHARE, NOISY_SIGMA, SIGMA)
    truth: list[list[int]] = [[] for _ in range(count)]
    where = rng.integers(40, 161, count)
    if pattern.startswith("step"):
        size = float(pattern.split()[1].rstrip("%")) / 100.0
        for i, at in enumerate(where):
            level[i, at:] += np.log1p(size)
            truth[i] = [int(at)]
    elif pattern == "three steps":
        for i in range(count):
            while True:
                at = np.sort(rng.choice(np.arange(20, N_POINTS - 20), 3, replace=False))
                if np.all(np.diff(at) >= 30):
                    break
            for a in at:
                level[i, a:] += rng.choice([-1.0, 1.0]) * np.log1p(rng.uniform(0.05, 0.10))
            truth[i] = [int(a) for a in at]
    elif pattern == "variance change":
        for i, at in enumerate(where):
            sigma[i, at:] *= 2.0
            truth[i] = [int(at)]
    level += rng.normal(0.0, SPREAD, level.shape)
    trials = np.sort(np.exp(level[..., None] + sigma[..., None] * rng.standard_normal(
        (count, N_POINTS, TRIALS))), axis=-1)  # fmt: skip
    lo, hi, _ = two_sided_ranks(TRIALS, 0.5, 0.95)
    values, lower, upper = np.median(trials, axis=-1), trials[..., lo - 1], trials[..., hi - 1]
    if pattern.endswith("outliers"):
        spikes = rng.random((count, N_POINTS)) < 0.03
        factor = np.where(spikes, rng.uniform(1.3, 2.0, spikes.shape), 1.0)
        values, lower, upper = values * factor, lower * factor, upper * factor
    return values, lower, upper, truth


def score(found: list[list[int]], truth: list[list[int]]) -> dict[str, float]:
    """Precision, recall and the share of series with an unmatched detection, at +-K."""
    detections = matched_d = matched_t = total_t = alarmed = 0
    for f, t in zip(found, truth, strict=True):
        free = list(t)
        extra = 0
        for index in f:
            near = [x for x in free if abs(x - index) <= K]
            if near:
                free.remove(min(near, key=lambda x: abs(x - index)))
                matched_d += 1
            else:
                extra += 1
        detections += len(f)
        matched_t += len(t) - len(free)
        total_t += len(t)
        alarmed += extra > 0
    return {
        "precision": matched_d / detections if detections else float("nan"),
        "recall": matched_t / total_t if total_t else float("nan"),
        "false_alarm": alarmed / len(truth),
    }


def _indices(result) -> list[int]:
    """Level and spread change points, a spread change within K of a level change counted
    once (the same change seen twice)."""
    level = [p.index for p in result.points]
    return level + [p.index for p in result.spread if all(abs(p.index - i) > K for i in level)]


def otava_python() -> Path:
    """The Python of a virtual environment with apache-otava, made on first use."""
    venv = Path(os.environ.get("BENCHLANG_OTAVA_VENV", Path(tempfile.gettempdir())
                               / "benchlang-otava-venv"))  # fmt: skip
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import otava.analysis"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        return python
    print(f"making {venv} with {OTAVA} (a few minutes once)", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", OTAVA], check=True)
    return python


def run_otava(python: Path, values: np.ndarray, pvalue: float, work: Path) -> list[list[int]]:
    path = work / "series.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(values.tolist())
    driver = work / "driver.py"
    driver.write_text(DRIVER)
    done = subprocess.run([str(python), str(driver), str(path), str(pvalue)], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return json.loads(done.stdout)


def timing(rng: np.random.Generator, steps: int) -> dict[str, float]:
    """Median wall and CPU milliseconds of adding the 10,000th point with ``previous`` and of a
    full computation, on a series with ``steps`` planted steps (interleaved, 9 times)."""
    n = 10_000
    level = np.zeros(n)
    for at in np.sort(rng.choice(np.arange(50, n - 50), steps, replace=False)):
        level[at:] += rng.choice([-1.0, 1.0]) * rng.uniform(0.01, 0.05)
    values = np.exp(level + rng.normal(0.0, 0.02, n))
    lower, upper = values * 0.97, values * 1.03
    previous = detect_changes(values[:-1], lower[:-1], upper[:-1])
    times: dict[str, list[float]] = {"add wall": [], "add cpu": [], "full wall": [], "full cpu": []}
    for _ in range(9):
        for kind, prev in (("add", previous), ("full", None)):
            w0, c0 = time.perf_counter(), time.process_time()
            result = detect_changes(values, lower, upper, previous=prev)
            times[f"{kind} wall"].append(time.perf_counter() - w0)
            times[f"{kind} cpu"].append(time.process_time() - c0)
        assert result == detect_changes(values, lower, upper, previous=previous)
    out = {k: 1e3 * float(np.median(v)) for k, v in times.items()}
    out["found"] = len(result.points)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=500, help="series per pattern")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--skip-otava", action="store_true")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    python = None if args.skip_otava else otava_python()
    tools = ["benchlang", "benchlang without intervals"]
    tools += [] if python is None else [name for name, _ in OTAVA_SETTINGS]
    print(f"{args.series} series of {N_POINTS} points per pattern, seed {args.seed}, K = +-{K}")
    print(f"| pattern | {' | '.join(tools)} |")
    print(f"| --- |{' --- |' * len(tools)}")
    seconds = dict.fromkeys(tools, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        for pattern in PATTERNS:
            values, lower, upper, truth = generate(pattern, args.series, rng)
            found = {}
            t0 = time.perf_counter()
            found["benchlang"] = [
                _indices(detect_changes(v, lo, hi))
                for v, lo, hi in zip(values, lower, upper, strict=True)
            ]
            t1 = time.perf_counter()
            found[tools[1]] = [[p.index for p in detect_changes(v).points] for v in values]
            seconds["benchlang"] += t1 - t0
            seconds[tools[1]] += time.perf_counter() - t1
            for name, pvalue in OTAVA_SETTINGS if python else ():
                t0 = time.perf_counter()
                found[name] = run_otava(python, values, pvalue, Path(tmp))
                seconds[name] += time.perf_counter() - t0
            cells = []
            for tool in tools:
                s = score(found[tool], truth)
                cells.append(
                    f"P {s['precision']:.2f} R {s['recall']:.2f} FA {s['false_alarm']:.3f}"
                )
            print(f"| {pattern} | {' | '.join(cells)} |", flush=True)
    per = {t: 1e3 * s / (args.series * len(PATTERNS)) for t, s in seconds.items()}
    print("ms per series: " + ", ".join(f"{t} {v:.1f}" for t, v in per.items()))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for steps in (0, 5, 100):
        t = timing(rng, steps)
        print(f"10,000 points, {steps} steps ({t['found']} found): add one point "
              f"{t['add wall']:.1f} ms wall / {t['add cpu']:.1f} ms CPU (with previous), full "
              f"recomputation {t['full wall']:.1f} / {t['full cpu']:.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
