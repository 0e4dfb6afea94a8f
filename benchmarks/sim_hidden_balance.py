"""How often a hidden factor is constant over a run, or unbalanced, with independent draws
(benchlang before issue 35: level = floor(u x L), u from SplitMix64 per round) and with the
dealt levels of plan.hidden (stratified across rounds; docs/hidden-factors.md).

For R = 2..8 rounds and seeds 1..SEEDS, a per-round hidden factor of L levels: the share of
seeds whose run holds a single level (its effect confounded with the whole run), and the share
whose level counts differ by more than one. Compiled through the real plan.

    python benchmarks/sim_hidden_balance.py [--seeds 1000]
"""

from __future__ import annotations

import argparse
from collections import Counter

import attrs
import numpy as np

from benchlang.design.streams import uniforms
from benchlang.lang.check import compile_source
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan

SPEC = """benchlang 1
experiment h {{
  factor f in {levels} hidden {{ per round }}
  benchmark k {{ run "echo {{f}}" }}
  design {{ runs {rounds} }}
}}
"""


def independent(seed: int, n_levels: int, rounds: int) -> list[int]:
    """The draws benchlang made before issue 35: one uniform per round on ``hidden:f``."""
    return (uniforms(seed, "hidden:f", np.arange(rounds)) * n_levels).astype(int).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000)
    args = parser.parse_args()
    print(f"per-round hidden factor, seeds 1..{args.seeds}: share of runs")
    print(
        f"{'L':>2} {'R':>2}  {'constant (indep.)':>18} {'constant (dealt)':>17}"
        f"  {'unbalanced (indep.)':>20} {'unbalanced (dealt)':>19}"
    )
    for n_levels in (2, 3):
        levels = list(range(n_levels))
        for rounds in range(2, 9):
            text = SPEC.format(levels=levels, rounds=rounds)
            experiment = compile_source(decode("h.bench", text.encode()))
            counts = np.zeros((2, 2))
            for seed in range(1, args.seeds + 1):
                plan = compile_plan(attrs.evolve(experiment, seed=seed))
                dealt = [plan.trial_hidden["f"][t] for t in plan.round_bounds[:-1]]
                for row, drawn in enumerate((independent(seed, n_levels, rounds), dealt)):
                    c = Counter(drawn)
                    full = [c.get(level, 0) for level in levels]
                    counts[row, 0] += len(c) == 1
                    counts[row, 1] += max(full) - min(full) > 1
            share = counts / args.seeds
            print(
                f"{n_levels:>2} {rounds:>2}  {share[0, 0]:>18.3f} {share[1, 0]:>17.3f}"
                f"  {share[0, 1]:>20.3f} {share[1, 1]:>19.3f}"
            )


if __name__ == "__main__":
    main()
