"""The run's family of tests (issue 37 item 2; benchlang.stats.family): family-wise error of
Holm (1979), false discovery rate of Benjamini-Hochberg (1995), and the intervals printed beside
them (Bonferroni's simultaneous coverage; Benjamini & Yekutieli 2005's false-coverage rate),
with no correction as the baseline, over correlated metrics and a mix of true and false nulls.

A simulated run: two crossed factors (tool, opt; 2 levels each), ``N`` trials per configuration,
three metrics measured on the same trial with equicorrelated normal noise (rho), and six
``compare`` tests (each metric by tool and by opt; two-sample t on the difference of means,
df = 2n - 2). Mixes: all six nulls true; or three false (a by tool, a by opt, b by tool at an
effect of 0.8 SD). Per cell 10,000 runs; Monte Carlo SE = sqrt(q(1 - q)/runs) for a rate, the
standard error of the mean for FDR/FCR.

    python3 benchmarks/sim_family.py [--runs 10000]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

from benchlang.stats.family import benjamini_hochberg, holm

N = 10
ALPHA = 0.05
EFFECT = 0.8
TESTS = [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
"""(metric, factor) of every test: metrics a, b, c; factors tool, opt."""


def simulate(runs: int, rho: float, false_nulls: int, seed: int) -> dict[str, np.ndarray]:
    """Per run and test: the estimate, its true value, SE, df and two-sided p-value."""
    rng = np.random.default_rng(seed)
    tool = np.repeat([0, 1], 2 * N)
    opt = np.tile(np.repeat([0, 1], N), 2)
    cov = np.full((3, 3), rho) + (1 - rho) * np.eye(3)
    noise = rng.multivariate_normal(np.zeros(3), cov, size=(runs, tool.size))  # runs x trials x 3
    truth = np.zeros(len(TESTS))
    truth[:false_nulls] = EFFECT
    for j, (metric, factor) in enumerate(TESTS):
        noise[:, :, metric] += truth[j] * (tool if factor == 0 else opt)
    est, se = np.empty((runs, len(TESTS))), np.empty((runs, len(TESTS)))
    for j, (metric, factor) in enumerate(TESTS):
        level = tool if factor == 0 else opt
        y0, y1 = noise[:, level == 0, metric], noise[:, level == 1, metric]
        est[:, j] = y1.mean(1) - y0.mean(1)
        se[:, j] = np.sqrt(y0.var(1, ddof=1) / y0.shape[1] + y1.var(1, ddof=1) / y1.shape[1])
    df = 4 * N - 2
    p = 2 * stats.t.sf(np.abs(est / se), df)
    return {"est": est, "se": se, "p": p, "truth": truth, "df": df}


def rate(x: np.ndarray) -> str:
    q = float(x.mean())
    return f"{q:.4f} ± {np.sqrt(q * (1 - q) / x.size):.4f}"


def mean(x: np.ndarray) -> str:
    return f"{float(x.mean()):.4f} ± {float(x.std(ddof=1) / np.sqrt(x.size)):.4f}"


def cell(runs: int, rho: float, false_nulls: int, seed: int) -> list[str]:
    s = simulate(runs, rho, false_nulls, seed)
    m = len(TESTS)
    null = s["truth"] == 0
    rows = []
    for name in ("none", "holm", "bh"):
        p = s["p"]
        adjusted = {"none": p, "holm": holm(p), "bh": benjamini_hochberg(p)}[name]
        reject = adjusted <= ALPHA
        r = reject.sum(1)
        false = (reject & null).sum(1)
        fwer = false > 0
        fdr = false / np.maximum(r, 1)
        power = reject[:, ~null].mean() if (~null).any() else float("nan")
        if name == "bh":  # FCR intervals of the selected at 1 - R alpha/m
            level = 1 - np.maximum(r, 1) * ALPHA / m
        elif name == "holm":  # Bonferroni's simultaneous intervals beside Holm's verdicts
            level = np.full(runs, 1 - ALPHA / m)
        else:
            level = np.full(runs, 1 - ALPHA)
        half = stats.t.ppf(1 - (1 - level) / 2, s["df"])[:, None] * s["se"]
        miss = np.abs(s["est"] - s["truth"]) > half
        coverage = (
            f"FCR {mean((miss & reject).sum(1) / np.maximum(r, 1))}"
            if name == "bh"
            else f"all cover {rate(~miss.any(1))}"
        )
        rows.append(
            f"| {rho:+.2f} | {m - false_nulls} of {m} | {name} | {rate(fwer)} | {mean(fdr)} | "
            f"{'-' if np.isnan(power) else f'{power:.3f}'} | {coverage} |"
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    args = parser.parse_args()
    print(f"alpha {ALPHA}, {len(TESTS)} tests over 3 metrics, {args.runs} runs per cell")
    print("| rho | true nulls | correction | FWER | FDR | power | intervals |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    seed = 0
    for false_nulls in (0, 3):
        for rho in (0.0, 0.5, 0.9, -0.45):
            seed += 1
            for row in cell(args.runs, rho, false_nulls, seed):
                print(row)


if __name__ == "__main__":
    main()
