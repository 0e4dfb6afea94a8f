"""Is the ranking one family? False claims per run, joint coverage and power of the headline's
intervals (issue 47), through ``stats.headline.rank``, the function ``benchlang run`` and
``benchlang analyze`` call, against the intervals each alone before (``rank(joint=False)``).

Data: k configurations, every round running each once; log values = configuration effect +
series effect (sd 0.05) + round effect (sd 0.02) + optional configuration x series interaction
(sd 0.01) + noise of sd ``SIGMA`` of one of four shapes: lognormal; 5% outliers x3; bimodal (a
second mode 20% slower, one trial in five); 1 ms ties (a 10 ms median rounded to whole ms).
A/A: all configurations equal, every claim is false. Power: configuration 0 is 10% faster than
the k - 1 others (equal), the power is the share of those k - 1 comparisons claimed.

* false: runs printing at least one false claim ("b is r× faster than j" whose truth is that j
  is not slower than b), goal <= 5% per run;
* joint: runs whose every interval covers its truth (the family: each configuration's ratio to
  the best of the others; each alone: each ratio to the observed best);
* Monte Carlo SE of a rate near 5% with N runs: sqrt(0.05 * 0.95 / N).

``python benchmarks/sim_ranking_family.py [--quick] [--runs N] [--cli]``: 150 runs a cell (40
with --quick), 500 bootstrap replicates a ranking; ``--cli`` also counts claims over 20 seeded
imports of ten identical configurations through ``benchlang import`` + ``benchlang analyze``.
About 10 minutes at nice 10 on two shared cores. Seeded: the same table every time.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlang.stats.headline import rank

SIGMA = 0.10
FAMILIES = ("alone", "pairs", "mcb")
SHAPES = ("lognormal", "outliers x3", "bimodal", "1 ms ties")


def data(rng, k, series, rounds, shape, interaction, effects):
    """Values (n,), configuration (n,), clusters (n, 2) of one simulated run."""
    config = np.tile(np.arange(k), series * rounds)
    rnd = np.repeat(np.arange(series * rounds), k) % rounds
    ser = np.repeat(np.arange(series), rounds * k)
    n = config.size
    noise = rng.normal(0, SIGMA, n)
    if shape == "outliers x3":
        noise = noise + np.where(rng.random(n) < 0.05, math.log(3.0), 0.0)
    elif shape == "bimodal":
        noise = noise + np.where(rng.random(n) < 0.2, math.log(1.2), 0.0)
    logs = (
        effects[config]
        + rng.normal(0, 0.05, series)[ser]
        + rng.normal(0, 0.02, (series, rounds))[ser, rnd]
        + rng.normal(0, interaction, (series, k))[ser, config]
        + noise
    )
    values = np.exp(logs)
    if shape == "1 ms ties":
        values = np.maximum(np.round(10.0 * values), 1.0)  # ms
    return values, config, np.stack([ser, rnd], axis=1)


def score(r, effects):
    """(any false claim, joint coverage, claimed true differences, true differences)."""
    false = claimed = 0
    covered = True
    for c in r.comparisons:
        truth = effects[c.worse] - effects[c.better]
        if c.clear and truth <= 0:
            false = 1
        if c.clear and truth > 0:
            claimed += 1
    k = len(effects)
    if not r.family.method.startswith("comparisons with the best"):
        for c in r.comparisons:
            true = math.exp(effects[c.worse] - effects[c.better])
            covered &= c.lower <= true * (1 + 1e-12) and c.upper >= true * (1 - 1e-12)
    else:
        for i, (lo, hi) in enumerate(r.family.bounds):
            true = math.exp(effects[i] - min(effects[j] for j in range(k) if j != i))
            covered &= lo <= true * (1 + 1e-12) and hi >= true * (1 - 1e-12)
    worse = sum(1 for j in range(k) if effects[j] > effects.min())
    return false, int(covered), claimed, worse


def cell(k, series, rounds, shape, interaction, runs, seed, flat=False, families=FAMILIES):
    """{(A/A or power, family): (false claims per run, joint coverage, power)}."""
    out = {}
    for name, effects in (("aa", np.zeros(k)), ("power", np.r_[0.0, np.full(k - 1, 0.1)])):
        for family in families:
            false = cover = claimed = worse = 0
            for d in range(runs):
                rng = np.random.default_rng([seed, k, series, d])
                values, config, clusters = data(rng, k, series, rounds, shape, interaction, effects)
                levels = ["series", "round"]
                if flat and family == "alone":
                    clusters = clusters[:, 1:] + rounds * clusters[:, :1]  # rounds across series
                    levels = ["round"]
                r = rank(
                    values,
                    config,
                    clusters,
                    level_names=levels,
                    replicates=500,
                    seed=d,
                    family=family,
                )
                if r.descriptive_only:
                    worse += k - 1
                    continue
                f, c, cl, w = score(r, effects)
                false, cover, claimed, worse = false + f, cover + c, claimed + cl, worse + w
            out[name, family] = (false / runs, cover / runs, claimed / max(worse, 1))
    return out


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def row(o, families=FAMILIES) -> str:
    false = " | ".join(pct(o["aa", f][0]) for f in families)
    cover = " | ".join(pct(o["aa", f][1]) for f in families)
    power = " | ".join(pct(o["power", f][2]) for f in families)
    return f"{false} | {cover} | {power} |"


def head(first: str, families=FAMILIES, before: str = "each alone") -> None:
    names = {"alone": before, "pairs": "all pairs", "mcb": "MCB"}
    cols = [f"{what}: {names[f]}" for what in ("false", "joint", "power") for f in families]
    print(f"| {first} | " + " | ".join(cols) + " |")
    print("| " + " | ".join(["---"] * (first.count("|") + 1) + ["---:"] * len(cols)) + " |")


def table_k(runs: int) -> None:
    print("\n### Number of configurations (lognormal, 1 series x 30 rounds)\n")
    head("k")
    for k in (2, 3, 5, 10, 20):
        print(f"| {k} | " + row(cell(k, 1, 30, "lognormal", 0.0, runs, 1)), flush=True)


def table_shapes(runs: int) -> None:
    print("\n### Shapes (1 series x 30 rounds)\n")
    head("shape | k")
    for shape in SHAPES:
        for k in (5, 10):
            print(f"| {shape} | {k} | " + row(cell(k, 1, 30, shape, 0.0, runs, 2)), flush=True)


def table_series(runs: int) -> None:
    print("\n### Series, with and without a configuration x series interaction (lognormal)\n")
    print(
        "With one series an interaction is part of that series' truth (the interval holds for it),"
    )
    print("so it is simulated with 3 and 5 series only.\n")
    fams = ("alone", "pairs")
    head("series x rounds | interaction sd | k", fams, "each alone, rounds pooled")
    for series, rounds, inters in ((1, 30, (0.0,)), (3, 10, (0.0, 0.01)), (5, 10, (0.0, 0.01))):
        for inter in inters:
            for k in (2, 5):
                o = cell(k, series, rounds, "lognormal", inter, runs, 3, True, fams)
                print(f"| {series} x {rounds} | {inter:g} | {k} | " + row(o, fams), flush=True)


def table_price(runs: int) -> None:
    print("\n### The price at k = 10 (lognormal, 1 series): rounds to regain the power\n")
    print("| rounds | power: each alone | all pairs | MCB |")
    print("| ---: | ---: | ---: | ---: |")
    for rounds in (30, 45, 60, 90):
        o = cell(10, 1, rounds, "lognormal", 0.0, runs, 4)
        power = " | ".join(pct(o["power", f][2]) for f in ("alone", "pairs", "mcb"))
        print(f"| {rounds} | {power} |", flush=True)


def cli_count(runs: int = 20) -> None:
    """Ten identical configurations, 1 series x 30 rounds in random order, through the CLI."""
    import contextlib
    import io
    import re
    import tempfile

    from benchlang.cli import main

    claim = re.compile(r"\d\.\d\d× .* than .*\[")
    hits = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(runs):
            rng = np.random.default_rng(seed)
            rows = ["test,order,run_seq,position,value"]
            for r in range(30):
                for pos, c in enumerate(rng.permutation(10)):
                    rows.append(f"c{c},random,{r},{pos},{float(np.exp(rng.normal(0, 0.1))):.6f}")
            csv, store = Path(tmp) / f"{seed}.csv", Path(tmp) / f"{seed}.sqlite"
            csv.write_text("\n".join(rows) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                main(["import", str(csv), "--store", str(store)])
                main(["analyze", str(store)])
            lines = [x for x in out.getvalue().splitlines() if claim.search(x)]
            hits += any("no clear order" not in x for x in lines)
    print(f"\nCLI: {hits} of {runs} seeded import + analyze runs of ten identical configurations "
          "printed a claim")  # fmt: skip


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 runs a cell (150 without)")
    parser.add_argument("--runs", type=int, default=None)
    parser.add_argument("--cli", action="store_true")
    args = parser.parse_args()
    runs = args.runs or (40 if args.quick else 150)
    start = time.time()
    print(f"{runs} runs a cell; Monte Carlo SE at 5%: {pct(math.sqrt(0.05 * 0.95 / runs))}, "
          f"noise sd {SIGMA}, 500 bootstrap replicates, 95% asked")  # fmt: skip
    table_k(runs)
    table_shapes(runs)
    table_series(runs)
    table_price(runs)
    if args.cli:
        cli_count()
    print(f"\n{time.time() - start:.0f} s")


if __name__ == "__main__":
    main_()
