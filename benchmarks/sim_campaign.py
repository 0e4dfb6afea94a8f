"""Campaigns: how often a ranking of identical configurations claims a difference when several
sessions are pooled, with sessions as the top clusters (what `analyze S1 S2 ...` does) or with
the sessions' rounds pooled as if one session (what reading the stores as one run would do).

Each session moves every configuration's level by a lognormal factor (sigma 5%) and each
configuration by a small session x configuration interaction (sigma 1%: the runner's cache or
frequency favouring one build that day); trials add 2% noise. The ranking is
``stats.headline.rank`` exactly as `analyze` calls it. Seeded; prints a table.

    python benchmarks/sim_campaign.py [--runs 400] [--quick]
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from benchlang.stats.headline import rank


def one_campaign(rng, k: int, sessions: int, rounds: int, interaction: float):
    config = np.tile(np.arange(k), sessions * rounds)
    session = np.repeat(np.arange(sessions), k * rounds)
    rnd = np.repeat(np.arange(sessions * rounds), k)
    level = rng.normal(0, 0.05, sessions)[session]
    inter = rng.normal(0, interaction, (sessions, k))[session, config]
    values = np.exp(level + inter + rng.normal(0, 0.02, config.size))
    return values, config, session, rnd


def false_claims(runs: int, k: int, sessions: int, rounds: int, interaction: float, seed: int):
    rng = np.random.default_rng(seed)
    by_session = pooled = 0
    for i in range(runs):
        values, config, session, rnd = one_campaign(rng, k, sessions, rounds, interaction)
        with_sessions = rank(
            values, config, np.stack([session, rnd], axis=1),
            level_names=("session", "round"), replicates=400, seed=i,
        )  # fmt: skip
        as_one = rank(values, config, rnd[:, None], level_names=("round",), replicates=400, seed=i)
        by_session += any(c.clear for c in with_sessions.comparisons)
        pooled += any(c.clear for c in as_one.comparisons)
    return by_session / runs, pooled / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400)
    parser.add_argument("--quick", action="store_true", help="100 runs a cell")
    args = parser.parse_args()
    runs = 100 if args.quick else args.runs
    print(f"{runs} A/A campaigns a cell; runs with any false claim (Monte Carlo SE at 5%: "
          f"{100 * math.sqrt(0.05 * 0.95 / runs):.1f} points)")  # fmt: skip
    print(
        "| configurations | sessions | rounds each | interaction | sessions as clusters | pooled as one session |"
    )
    print("|---|---|---|---|---|---|")
    for k, sessions, rounds, interaction in [
        (3, 4, 10, 0.0), (3, 4, 10, 0.01), (3, 6, 10, 0.01), (5, 4, 10, 0.01), (3, 3, 10, 0.01),
    ]:  # fmt: skip
        a, b = false_claims(runs, k, sessions, rounds, interaction, seed=k * 100 + sessions)
        print(
            f"| {k} | {sessions} | {rounds} | {100 * interaction:g}% | {100 * a:.1f}% | {100 * b:.1f}% |"
        )


if __name__ == "__main__":
    main()
