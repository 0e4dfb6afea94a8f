"""Type I error of the whole ``cluster auto`` rule in A/B layouts (docs/ab-designs.md,
"cluster auto"): the choice (host blocks, the cluster-level t, the conditional request
clusters, or no interval) and the conditional answer's check, together, on A/A data sets drawn
with simulate-aa's machinery (benchlang/stats/ab/simulate.py).

Every layout at H = 2, 4, 16 hosts, R = 32 requests per version, T = 2 repetitions, with the
Table 3 standard deviations (request 1.05, host 0.12, request x batch 0.10, residual 0.10;
docs/ab-designs.md) and the host x batch variance from 0 to the request variance. A cell reports
what the rule gives (``method``), the share of data sets with an interval, and the Type I error
of the rule (rejections of the true A/A null among all data sets, nominal 5%). Where the rule
would take the conditional request-clustered answer, the check runs on each data set
(``--check-experiments`` A/A experiments x ``--check-replicates`` replicates, fewer than a run's
400 x 200 to fit this 2-core machine), and "request always" shows what request clusters give
without the check. The conditional answer is measured here whatever ``CONDITIONAL`` says.

    python benchmarks/sim_cluster_auto.py [--datasets 1000] [--conditional-datasets 300]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from benchlang.design.layouts import LAYOUTS, layout_schedule
from benchlang.stats.ab import ABDesign, VarianceComponents, simulate_outcomes
from benchlang.stats.ab.auto import (
    CONDITIONAL,
    check_requests,
    choose_layout_cluster,
    host_scheme,
)
from benchlang.stats.ab.fewclusters import cluster_t_pairs
from benchlang.stats.ab.levels import compare_levels_many

SD = {"request": 1.05, "host": 0.12, "request_batch": 0.10, "residual": 0.10}
SHARES = (0.0, 0.005, 0.05, 0.25, 1.0)
R, T = 32, 2


def rejects(out: dict[str, np.ndarray]) -> np.ndarray:
    return (out["ci_low"][:, 0] > 0) | (out["ci_high"][:, 0] < 0)


def cell(kind, H, share, datasets, cond_datasets, args, seed):
    rng = np.random.default_rng(seed)
    design = ABDesign.from_schedule(layout_schedule(kind, H, R, T, seed=seed))
    comps = VarianceComponents.from_sd(SD, host_batch=(share * SD["request"] ** 2) ** 0.5)
    version = np.asarray(design.version, dtype=np.int64)
    _, blocks = host_scheme(design)
    Y0 = simulate_outcomes(design, comps, 1, rng)
    choice = choose_layout_cluster(Y0[0], design, scale="difference", seed=seed)
    method = choice.method
    if method == "descriptive" and "each version ran on its own hosts" not in choice.why:
        method = "conditional"  # measure the conditional answer where the rule could take it
    E = cond_datasets if method == "conditional" else datasets
    Y = simulate_outcomes(design, comps, E, rng)
    always = None
    if method == "bootstrap":
        hit = rejects(compare_levels_many(Y, version, blocks, scale="difference", rng=rng))
        given = np.ones(E, dtype=bool)
    elif method == "cluster_t":
        hit = rejects(cluster_t_pairs(Y, version, blocks, [(1, 0)], "difference", 95.0))
        given = np.ones(E, dtype=bool)
    elif method == "conditional":
        req = rejects(
            compare_levels_many(
                Y, version, design.request, scale="difference", replicates=200, rng=rng
            )
        )
        given = np.zeros(E, dtype=bool)
        for e in range(E):
            check = check_requests(
                Y[e], design, rng, None, args.check_experiments, args.check_replicates
            )
            given[e] = check is not None and check.passed
        hit, always = req & given, float(req.mean())
    else:
        hit, given = np.zeros(E, dtype=bool), np.zeros(E, dtype=bool)
    return method, E, float(given.mean()), float(hit.mean()), always


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--conditional-datasets", type=int, default=300)
    parser.add_argument("--check-experiments", type=int, default=200)
    parser.add_argument("--check-replicates", type=int, default=100)
    args = parser.parse_args()
    print(
        f"cluster auto, A/A, R={R}, T={T}; host x batch variance as a share of the request "
        f"variance; nominal 5%; CONDITIONAL in the code: {CONDITIONAL}"
    )
    print(
        f"{'layout':17} {'H':>3} {'hb/req':>6} {'method':12} {'sets':>5} {'interval':>8} "
        f"{'Type I':>7} {'among intervals':>15} {'request always':>14} {'s':>4}"
    )
    for a, kind in enumerate(LAYOUTS):
        for H in (2, 4, 16):
            for b, share in enumerate(SHARES):
                t0 = time.perf_counter()
                method, E, given, rate, always = cell(
                    kind,
                    H,
                    share,
                    args.datasets,
                    args.conditional_datasets,
                    args,
                    100 * a + 10 * b + H,
                )
                print(
                    f"{kind:17} {H:>3} {share:>6.3g} {method:12} {E:>5} {given:>8.1%} "
                    f"{rate:>7.1%} {'-' if not given else f'{rate / given:.1%}':>15} "
                    f"{'-' if always is None else f'{always:.1%}':>14} "
                    f"{time.perf_counter() - t0:>4.0f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
