"""Coverage of a composite's two standard errors when the benchmarks share hosts
(stats/composite.py; docs/statistics.md, "A composite across benchmarks").

Each simulated run: H hosts running K = 3 benchmarks T = 2 times per version. ``paired``: every
host runs both versions (the layout of ``benchlang composite``'s test: every round runs every
configuration); ``split``: half the hosts run control, half treatment (Perflab's unbalanced
layout). A trial's value is ``mu_k + v delta_k + a_hk + v b_hk + e``: host effects ``a`` (SD 1)
and host x version effects ``b`` (SD 1), each correlated across the benchmarks with correlation
rho (a host that is slow, or slow with the treatment, is so for every benchmark), and noise e
(SD 0.5). Weights 0.5, 0.3, 0.2. The composite's 95% interval is judged with the footnote-11 SE
(independent benchmarks; Perflab, Bakshy & Frachtenberg WWW 2015, footnote 11) and with the
joint host bootstrap SE (one Poisson(1) weight per host, shared by every benchmark), each as
benchlang gives it (SE x sqrt(G/(G-1)), t(G-1); stats.composite.small_sample) and, for the
record, as Perflab's normal interval (bootstrap SE, z).

1,000 runs per cell, 500 replicates per bootstrap; Monte Carlo SE of a coverage near 95%:
sqrt(0.95 x 0.05 / 1000) = 0.7 percentage points. Prints a Markdown table. The split layout
starts at 10 hosts: 6 would leave 3 per version, which benchlang refuses (fewer than 5).

    python3 benchmarks/sim_composite.py [--runs 1000] [--replicates 500]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlang.stats.composite import cell_sums, composite_ses, replicate_effects, small_sample

K, T = 3, 2
WEIGHTS = np.array([0.5, 0.3, 0.2])
DELTA = np.array([0.2, -0.1, 0.4])
SD_HOST, SD_INTERACTION, SD_NOISE = 1.0, 1.0, 0.5


def cell(
    hosts: int, rho: float, runs: int, replicates: int, seed: int, layout: str = "paired"
) -> dict[str, float]:
    from scipy.stats import t as student_t

    rng = np.random.default_rng(seed)
    host = np.repeat(np.arange(hosts), 2 * K * T)
    if layout == "paired":
        version = np.tile(np.repeat([0, 1], K * T), hosts)
        component = np.tile(np.repeat(np.arange(K), T), 2 * hosts)
    else:
        version = host % 2
        component = np.tile(np.repeat(np.arange(K), 2 * T), hosts)
    corr = np.full((K, K), rho) + (1.0 - rho) * np.eye(K)
    chol = np.linalg.cholesky(corr)
    a = SD_HOST * rng.standard_normal((runs, hosts, K)) @ chol.T
    b = SD_INTERACTION * rng.standard_normal((runs, hosts, K)) @ chol.T
    e = SD_NOISE * rng.standard_normal((runs, host.size))
    y = DELTA[component] * version + a[:, host, component] + version * b[:, host, component] + e
    sums, counts = cell_sums(y, version, component, host, K, hosts)
    means = sums.sum(axis=1) / counts.sum(axis=0)
    estimate = (means[:, K:] - means[:, :K]) @ WEIGHTS
    reps = replicate_effects(sums, counts, replicates, "poisson", rng)
    se_k, se_ind, se_joint = composite_ses(reps, WEIGHTS)
    dev = reps - np.nanmean(reps, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        cov = np.einsum("ebi,ebj->eij", np.nan_to_num(dev), np.nan_to_num(dev)) / (replicates - 1)
        r = cov / (se_k[:, :, None] * se_k[:, None, :])
    found = np.nanmean(r[:, ~np.eye(K, dtype=bool)])
    truth = float(DELTA @ WEIGHTS)
    miss = np.abs(estimate - truth)
    factor, df = small_sample(hosts)
    crit = factor * float(student_t.ppf(0.975, df))
    return {
        "independent": float(np.mean(miss <= crit * se_ind)),
        "joint": float(np.mean(miss <= crit * se_joint)),
        "normal": float(np.mean(miss <= 1.96 * se_joint)),
        "found": float(found),
        "true_sd": float(np.std(estimate, ddof=1)),
        "se_ind": float(factor * np.mean(se_ind)),
        "se_joint": float(factor * np.mean(se_joint)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--replicates", type=int, default=500)
    args = parser.parse_args()
    started = time.perf_counter()
    print(
        "| layout | hosts | rho | coverage, footnote-11 SE | coverage, joint SE "
        "| joint SE, normal interval (Perflab §5.1) | correlation found | true SD "
        "| mean SE (footnote 11) | mean SE (joint) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for layout in ("paired", "split"):
        for i, hosts in enumerate((6, 10, 20, 40)):
            if layout == "split" and hosts < 10:
                continue
            for j, rho in enumerate((-0.4, 0.0, 0.5, 0.9)):
                seed = 1000 * i + j + (0 if layout == "paired" else 500)
                r = cell(hosts, rho, args.runs, args.replicates, seed, layout)
                print(
                    f"| {layout} | {hosts} | {rho:g} | {100 * r['independent']:.1f}% "
                    f"| {100 * r['joint']:.1f}% | {100 * r['normal']:.1f}% | {r['found']:.2f} "
                    f"| {r['true_sd']:.4f} | {r['se_ind']:.4f} | {r['se_joint']:.4f} |"
                )
    print(
        f"\n{args.runs} runs per cell, {args.replicates} replicates; Monte Carlo SE of a "
        f"coverage near 95%: {100 * np.sqrt(0.95 * 0.05 / args.runs):.1f} points; "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
