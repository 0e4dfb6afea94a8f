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

Scoring: a detection at the index of a true change matches it (``--within K``: within +-K
points; each true change at most once): a change point one commit early names the wrong commit. Precision = matched detections / detections; recall = matched true changes / true
changes; "series with a false alarm" = share of series with a detection matching nothing (on the
no-change pattern: the false-alarm rate). benchlang gets each point's KPI and interval, Otava
the KPI (its CSV input has no intervals). Otava runs in its own virtual environment, made here
(``python3 -m venv`` + ``pip install apache-otava==0.8.0``; it pins numpy 2.2 and scipy < 1.17,
so never in benchlang's environment), as a subprocess on CSV files, through its Python API
``otava.analysis.compute_change_points`` (the ``otava analyze`` algorithm), at its defaults
(window 50, p 0.001) and at p 0.05.
``--otava-series``: Apache Otava's own test series (tests/data/otava_series.json, each cited to
its test) with the indices its tests expect, and what benchlang finds at its defaults (and Otava
at its ``analyze`` defaults, unless ``--skip-otava``). ``--serial N``: N series of pure AR(1)
points (2% noise) without change per cell: the share with a change point, and with one the
result does not flag (neither "descriptive only" nor "little power").
``--calibration N``: the false alarms on N series without change of 100, 1,000 and 10,000
points (also with AR(1) noise between commits), with Wilson intervals. The time of adding a
point to a history of 10,000 is benchmarks/bench_history_incremental.py.

    python benchmarks/bench_changepoints_otava.py [--series 500] [--seed 30] [--skip-otava]
    python benchmarks/bench_changepoints_otava.py --otava-series [--skip-otava]
    python benchmarks/bench_changepoints_otava.py --serial 1000
    python benchmarks/bench_changepoints_otava.py --calibration 1000 [--lengths 100,1000,10000]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchlang.stats._orderstat import two_sided_ranks
from benchlang.stats.changepoints import detect_changes

N_POINTS, TRIALS, SIGMA, NOISY_SIGMA, NOISY_SHARE, SPREAD = 200, 15, 0.05, 0.20, 0.2, 0.01
SAME = 5  # a spread change within this many points of a level change is the same change
FIXTURE = Path(__file__).resolve().parents[1] / "tests" / "data" / "otava_series.json"
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


def score(found: list[list[int]], truth: list[list[int]], k: int = 0) -> dict[str, float]:
    """Precision, recall and the share of series with an unmatched detection, at +-``k``
    (0: the exact index)."""
    detections = matched_d = matched_t = total_t = alarmed = 0
    for f, t in zip(found, truth, strict=True):
        free = list(t)
        extra = 0
        for index in f:
            near = [x for x in free if abs(x - index) <= k]
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
    """Level and spread change points, a spread change within SAME points of a level change
    counted once (the same change seen twice)."""
    level = [p.index for p in result.points]
    return level + [p.index for p in result.spread if all(abs(p.index - i) > SAME for i in level)]


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
        csv.writer(f).writerows(values.tolist() if hasattr(values, "tolist") else values)
    driver = work / "driver.py"
    driver.write_text(DRIVER)
    done = subprocess.run([str(python), str(driver), str(path), str(pvalue)], check=True,
                          capture_output=True, text=True)  # fmt: skip
    return json.loads(done.stdout)


def no_change(n: int, rng: np.random.Generator, ar: float = 0.0):
    """One series without change built as ``generate`` builds its points; with ``ar`` the
    commit-to-commit spread is AR(1) with that coefficient (same marginal spread)."""
    spread = rng.normal(0.0, SPREAD, n)
    if ar:
        from scipy.signal import lfilter

        spread = lfilter([math.sqrt(1.0 - ar * ar)], [1.0, -ar], spread)
    sigma = np.where(rng.random(n) < NOISY_SHARE, NOISY_SIGMA, SIGMA)
    trials = np.sort(np.exp(spread[:, None] + sigma[:, None] * rng.standard_normal((n, TRIALS))),
                     axis=1)  # fmt: skip
    lo, hi, _ = two_sided_ranks(TRIALS, 0.5, 0.95)
    return np.median(trials, axis=1), trials[:, lo - 1], trials[:, hi - 1]


def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion k / n (Wilson, JASA 22, 1927)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def calibration(rng: np.random.Generator, lengths: list[int], count: int) -> None:
    """The share of series without change where any change point is reported (a series is a
    false alarm if it shows one, level or spread), with 95% Wilson intervals."""
    print(f"false alarms per series without change, alpha 0.05, {count} series a cell")
    print("| noise | points | level | spread | any (95% interval) | ms a series |")
    print("| --- | --- | --- | --- | --- | --- |")
    kinds = (("lognormal, KPIs with intervals", 0.0, True),
             ("lognormal, KPIs without intervals", 0.0, False),
             ("AR(1) 0.5 spread, KPIs with intervals", 0.5, True))  # fmt: skip
    for name, ar, intervals in kinds:
        for n in lengths:
            level = spread = either = 0
            t0 = time.process_time()
            for _ in range(count):
                v, lo, hi = no_change(n, rng, ar)
                found = detect_changes(v, lo, hi) if intervals else detect_changes(v)
                level += bool(found.points)
                spread += bool(found.spread)
                either += bool(found.points or found.spread)
            low, high = wilson(either, count)
            ms = 1e3 * (time.process_time() - t0) / count
            print(f"| {name} | {n:,} | {level / count:.3f} | {spread / count:.3f} | "
                  f"**{either / count:.3f}** [{low:.3f}, {high:.3f}] | {ms:.0f} |", flush=True)  # fmt: skip


def otava_series(python: Path | None) -> None:
    """Otava's test series: expected indices, benchlang's at its defaults (the changes of at
    least the test's ``min_magnitude``), exact or not; Otava's at its analyze defaults."""
    cases = json.loads(FIXTURE.read_text())["series"]
    otava = [None] * len(cases)
    if python is not None:
        with tempfile.TemporaryDirectory() as tmp:
            otava = run_otava(python, [c["values"] for c in cases], 0.001, Path(tmp))
    print(
        "| series | points | expected | benchlang | exact | possible | Otava (window 50, p 0.001) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    hits = 0
    for case, theirs in zip(cases, otava, strict=True):
        found = detect_changes(case["values"])
        smallest = case.get("min_magnitude", 0.0)
        ours = [p.index for p in found.points if not abs(p.ratio - 1.0) < smallest]
        possible = getattr(found, "possible", None)
        exact = ours == case["expected"]
        hits += exact
        print(f"| {case['name']} | {len(case['values'])} | {case['expected']} | {ours} | "
              f"{'yes' if exact else 'no'} | {possible.describe() if possible else ''} | "
              f"{'' if theirs is None else theirs} |")  # fmt: skip
    print(f"{hits} of {len(cases)} series exactly as Otava's tests expect")


def serial(rng: np.random.Generator, count: int) -> None:
    """Series without change of pure AR(1) points: the share with a change point and with one
    the result does not flag, with Wilson intervals."""
    from scipy.signal import lfilter

    print(f"AR(1) points (2% noise, KPIs without intervals), no change, {count} series a cell")
    print("| rho | points | with a change point (95% interval) | unflagged |")
    print("| --- | --- | --- | --- |")
    for rho in (0.0, 0.3, 0.5):
        for n in (50, 100, 200):
            shown = unflagged = 0
            for _ in range(count):
                e = lfilter([math.sqrt(1.0 - rho * rho)], [1.0, -rho], rng.normal(0, 0.02, n))
                found = detect_changes(np.exp(e))
                note = found.note or ""
                shown += bool(found.points)
                flagged = "descriptive only" in note or "little power" in note
                unflagged += bool(found.points) and not flagged
            low, high = wilson(shown, count)
            print(f"| {rho} | {n} | **{shown / count:.3f}** [{low:.3f}, {high:.3f}] | "
                  f"{unflagged / count:.3f} |", flush=True)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=500, help="series per pattern")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--skip-otava", action="store_true")
    parser.add_argument(
        "--calibration",
        metavar="N",
        type=int,
        help="instead: false alarms on N series without change of 100, 1,000, 10,000 points",
    )
    parser.add_argument("--lengths", default="100,1000,10000", help="with --calibration")
    parser.add_argument("--within", metavar="K", type=int, default=0,
                        help="a detection within +-K points matches (default 0: exact)")  # fmt: skip
    parser.add_argument("--otava-series", action="store_true",
                        help="instead: Apache Otava's own test series, exact indices")  # fmt: skip
    parser.add_argument("--serial", metavar="N", type=int,
                        help="instead: N series of AR(1) points per cell")  # fmt: skip
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    if args.otava_series:
        otava_series(None if args.skip_otava else otava_python())
        return
    if args.serial:
        serial(rng, args.serial)
        return
    if args.calibration:
        calibration(rng, [int(x) for x in args.lengths.split(",")], args.calibration)
        return
    python = None if args.skip_otava else otava_python()
    tools = ["benchlang", "benchlang without intervals"]
    tools += [] if python is None else [name for name, _ in OTAVA_SETTINGS]
    where = "exact index" if not args.within else f"within +-{args.within}"
    print(f"{args.series} series of {N_POINTS} points per pattern, seed {args.seed}, {where}")
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
                s = score(found[tool], truth, args.within)
                cells.append(
                    f"P {s['precision']:.2f} R {s['recall']:.2f} FA {s['false_alarm']:.3f}"
                )
            print(f"| {pattern} | {' | '.join(cells)} |", flush=True)
    per = {t: 1e3 * s / (args.series * len(PATTERNS)) for t, s in seconds.items()}
    print("ms per series: " + ", ".join(f"{t} {v:.1f}" for t, v in per.items()))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
