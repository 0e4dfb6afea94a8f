"""Run-level independence verdict: per-run false alarms and power, before and after.

Issue 35, item 1. Each simulated run has the shape of a benchlang plan: ``series`` series of
``runs`` rounds, each round every configuration once in a fresh random order (``order
random``), the trial's index in the plan its time. Values are lognormal (sigma 0.1) and

- iid: independent draws (every flag is a false alarm);
- drift: x (1 + 0.25 trial / N), a machine that slows by 25% over the run;
- AR(1): within each series, the consecutive trials of a configuration follow a Gaussian AR(1)
  with phi = 0.5 on the log scale (stationary variance sigma^2).

"after" is the run-level verdict exactly as the report computes it
(``stats.run_independence.independence_tests`` on every run at once, then ``holm`` at 5%);
"before" is TriScale's per-series rule through ``stats.triscale.analyze_metric`` with
``per_series_independence=True`` (a run is flagged when any series' metric values or any
configuration's KPIs across series fail their test at 5%). Seeded; prints the table that
docs/statistics.md shows. Monte Carlo standard error of a rate p over R runs: sqrt(p(1-p)/R).

    python benchmarks/sim_independence_family.py [--runs 1000] [--only 10x10x25] [--no-before]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from benchlang.stats.run_independence import RUN_ALPHA, holm, independence_tests
from benchlang.stats.triscale import analyze_metric

SHAPES = [(3, 5, 5), (10, 10, 5), (3, 5, 25), (10, 10, 25)]
SCENARIOS = ("iid", "drift 25%", "AR(1) 0.5")
CHUNK = 100  # runs sharing one permutation seed (a run's report uses its plan's seed)


def plan(configs: int, series: int, runs: int, rng: np.random.Generator):
    """Configuration, series and time of every trial, rounds in random order."""
    rounds = series * runs
    configuration = np.argsort(rng.random((rounds, configs)), axis=1).ravel()
    series_of = np.repeat(np.arange(series), runs * configs)
    return configuration, series_of, np.arange(rounds * configs)


def values(scenario: str, reps: int, configuration, series_of, rng: np.random.Generator):
    n = configuration.size
    z = rng.normal(size=(reps, n))
    if scenario == "AR(1) 0.5":
        phi = 0.5
        blocks = configuration * (series_of.max() + 1) + series_of
        for b in np.unique(blocks):
            idx = np.flatnonzero(blocks == b)  # in time order
            e = z[:, idx]
            x = np.empty_like(e)
            x[:, 0] = e[:, 0]
            for i in range(1, idx.size):
                x[:, i] = phi * x[:, i - 1] + math.sqrt(1 - phi**2) * e[:, i]
            z[:, idx] = x
    out = np.exp(0.1 * z) * (1.0 + configuration)[None, :]
    if scenario == "drift 25%":
        out *= 1.0 + 0.25 * np.arange(n) / n
    return out


def after(x, configuration, series_of, t, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Flags of the run-level verdict (any Holm rejection), trend and autocorrelation."""
    blocks = configuration * (series_of.max() + 1) + series_of
    res = independence_tests(x, configuration, blocks, t, seed=seed)
    p = np.stack([res["trend_p"], res["serial_p"]], axis=1)
    rejected, _ = holm(p, RUN_ALPHA)
    return rejected.any(axis=1), rejected[:, 0], rejected[:, 1]


def before(x, configuration, series_of) -> np.ndarray:
    """Flags of TriScale's per-series rule, as analyze_metric applies it on request."""
    flags = np.zeros(x.shape[0], bool)
    for r in range(x.shape[0]):
        for c in np.unique(configuration):
            mine = configuration == c
            res = analyze_metric(
                x[r, mine], series_of[mine], 50, 95, "upper", 25, 75, per_series_independence=True
            )
            if any("independent" in reason for reason in res.reasons):
                flags[r] = True
                break
    return flags


def cell(shape, scenario: str, reps: int, seed: int, old: bool) -> dict:
    rng = np.random.default_rng(seed)
    configuration, series_of, t = plan(*shape, rng)
    x = values(scenario, reps, configuration, series_of, rng)
    flags, trend, serial = [], [], []
    for i in range(0, reps, CHUNK):
        f, tr, se = after(x[i : i + CHUNK], configuration, series_of, t, seed * 1000 + i)
        flags.append(f)
        trend.append(tr)
        serial.append(se)
    out = {
        "after": float(np.concatenate(flags).mean()),
        "trend": float(np.concatenate(trend).mean()),
        "serial": float(np.concatenate(serial).mean()),
        "before": float(before(x, configuration, series_of).mean()) if old else math.nan,
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000, help="simulated runs per cell")
    parser.add_argument("--no-before", action="store_true", help="skip the per-series rule")
    parser.add_argument("--only", help="one shape, e.g. 10x10x25 (all scenarios)")
    args = parser.parse_args()
    reps = args.runs
    print(f"{reps} runs per cell; run-level family at {100 * RUN_ALPHA:g}% (Holm over 2 tests)")
    head = (
        "| configurations x series x runs | values | scenario | before: per-series rule "
        "| after: run-level | trend | autocorrelation |"
    )
    print(head)
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: |")
    started = time.perf_counter()
    for k, shape in enumerate(SHAPES):
        if args.only and args.only != "x".join(map(str, shape)):
            continue
        for j, scenario in enumerate(SCENARIOS):
            if scenario == "AR(1) 0.5" and shape[2] < 25:
                continue
            r = cell(shape, scenario, reps, 100 * k + j + 1, not args.no_before)
            se = math.sqrt(max(r["after"] * (1 - r["after"]), 1e-12) / reps)
            before_text = "-" if math.isnan(r["before"]) else f"{100 * r['before']:.1f}%"
            print(
                f"| {shape[0]} x {shape[1]} x {shape[2]} | {math.prod(shape)} | {scenario} "
                f"| {before_text} | {100 * r['after']:.1f}% ± {100 * se:.1f} "
                f"| {100 * r['trend']:.1f}% | {100 * r['serial']:.1f}% |",
                flush=True,
            )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
