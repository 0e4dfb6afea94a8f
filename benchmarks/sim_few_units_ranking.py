"""Few top-level units: which family should the ranking use? Joint false claims (A/A) and power
of ``stats.headline.rank`` with G = 3 ... 15 series of a few rounds each, k = 2 ... 10
configurations, for three rules (issue 47, items 1 and 3):

* (a) ``boot5``: the rule before, the cluster-level t from 3 to 4 units, from 5 units the
  studentized bootstrap maximum (``rank(min_clusters=5, few_units="bonferroni")``);
* (b) ``t-bonf``: the cluster-level t on per-series contrasts at every G, df G - 1 (Donald &
  Lang 2007), Bonferroni over the family (``rank(min_clusters=BIG, few_units="bonferroni")``);
* (c) ``t-maxt``: the same contrasts, the single-step max-t over the family with each contrast
  studentized by its own sd (Hothorn, Bretz & Westfall 2008; ``few_units="max-t"``);
* (c') ``mvt-pooled`` (a side check, computed here from the per-series medians, not offered by
  ``rank``): the critical value of the multivariate t with ONE chi-square / (G - 1) scale and
  the balanced correlation (Tukey's q(k, G - 1) / sqrt 2), applied to the separately
  studentized contrasts: the shortcut a reader might take, shown to be too liberal.

Data (log scale): configuration effect + series level (sd 0.05, common to all configurations)
+ round (sd 0.02) + configuration x series interaction (sd 0.01) + noise (sd 0.10), lognormal
values; every round runs every configuration once. A/A: all equal, a run with any clear
comparison is a false claim (nominal 5% per run; MC SE sqrt(p (1 - p) / N) printed). Power:
configuration 0 is 1.1x (1.2x) faster than the k - 1 others, the share of those comparisons
claimed. ``--hetero``: A/A with configuration 0's interaction and noise 3x the others' (a
departure from the exchangeability the max-t's critical value assumes).

``--rule``: the rule ``rank`` applies by default (``stats.cluster_t.takes_the_t``) at G = 15 ...
30 series of 4 or 5 rounds, k = 3: which path each cell took, A/A and the power for a 1.05x
difference (no cliff where the bootstrap would start); ``--missing`` drops configuration k - 1
from series 0 (the t with Bonferroni's critical value).

``python benchmarks/sim_few_units_ranking.py [--k 2 3 5 10] [--runs 1000] [--power-runs 400]
[--rounds 5] [--hetero] [--cli] [--cli-rates N] [--rule [--missing]]``; ``--cli-rates N``: A/A and
1.2x power of N quickstart-shaped data sets a row through ``benchlang import`` + ``analyze
--json`` (about 5 minutes for 1,000); ``--cli`` imports one generated CSV (5 series x 5 rounds,
3 configurations, 1.3x) through ``benchlang import`` + ``benchlang analyze`` and prints the
ranking. Seeded: the same table every time. Each k took 2-9 minutes at nice 10 on two shared
cores (about 20 in all), ``--hetero`` 4.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchlang.stats.headline import rank

SERIES = (3, 4, 5, 6, 8, 10, 15)
LEVEL, ROUND, INTERACTION, NOISE = 0.05, 0.02, 0.01, 0.10
RULES = {
    "boot5": {"min_clusters": 5, "few_units": "bonferroni"},
    "t-bonf": {"min_clusters": 10**9, "few_units": "bonferroni"},
    "t-maxt": {"min_clusters": 10**9, "few_units": "max-t"},
}


def design(series: int, rounds: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    config = np.tile(np.arange(k), series * rounds)
    rnd = np.repeat(np.arange(series * rounds), k) % rounds
    ser = np.repeat(np.arange(series), rounds * k)
    return config, np.stack([ser, rnd], axis=1)


def values(rng, config, clusters, k, effects, hetero=False):
    ser, rnd = clusters[:, 0], clusters[:, 1]
    series, rounds = int(ser.max()) + 1, int(rnd.max()) + 1
    scale = np.where(np.arange(k) == 0, 3.0, 1.0) if hetero else np.ones(k)
    logs = (
        effects[config]
        + rng.normal(0, LEVEL, series)[ser]
        + rng.normal(0, ROUND, (series, rounds))[ser, rnd]
        + (rng.normal(0, INTERACTION, (series, k)) * scale)[ser, config]
        + rng.normal(0, NOISE, config.size) * scale[config]
    )
    return np.exp(logs)


def pooled_mvt(series: int, k: int, draws: int = 40_000) -> float:
    """(c'): the 95% quantile of max |Z_i - Z_c| / (sqrt 2 · s), Z ~ N(0, I_k), ONE s² ~
    chi²(G - 1) / (G - 1): Tukey's q(k, G - 1) / sqrt 2, the multivariate t with df G - 1."""
    rng = np.random.default_rng(1)
    z = rng.standard_normal((draws, k))
    s = np.sqrt(rng.chisquare(series - 1, draws) / (series - 1))
    return float(np.quantile((z.max(axis=1) - z.min(axis=1)) / (math.sqrt(2) * s), 0.95))


def mvt_claims(v, config, clusters, k, crit, effects) -> tuple[bool, int]:
    """(c') from the per-series medians: (any pair of equal configurations claimed, the pairs
    (0, j) claimed) with the separately studentized contrasts against ``crit``; every pair
    counts, not only those with the observed best (the error the family's critical value
    controls)."""
    logs = np.log(v)
    ser = clusters[:, 0]
    g = int(ser.max()) + 1
    med = np.array(
        [[np.median(logs[(ser == s) & (config == j)]) for j in range(k)] for s in range(g)]
    )
    c, i = np.triu_indices(k, 1)
    d = med[:, i] - med[:, c]
    t = d.mean(axis=0) / (d.std(axis=0, ddof=1) / math.sqrt(g))
    clear = np.abs(t) > crit
    same = effects[i] == effects[c]
    return bool(clear[same].any()), int(clear[(c == 0) & ~same].sum())


def cell(series, rounds, k, factor, runs, rules, seed, hetero=False):
    """{rule: (rate of runs with a false claim, share of true differences claimed)}."""
    config, clusters = design(series, rounds, k)
    effects = np.zeros(k)
    effects[1:] = math.log(factor)  # configuration 0 faster by ``factor``
    false = dict.fromkeys([*rules, "mvt-pooled"], 0)
    found = dict.fromkeys([*rules, "mvt-pooled"], 0)
    crit = pooled_mvt(series, k) if k > 2 else None
    for r in range(runs):
        rng = np.random.default_rng([seed, series, k, int(1000 * factor), r])
        v = values(rng, config, clusters, k, effects, hetero)
        for name, kw in rules.items():
            out = rank(
                v, config, clusters, level_names=["series", "round"], seed=r, replicates=1000, **kw
            )
            bad = any(c.clear and effects[c.worse] <= effects[c.better] for c in out.comparisons)
            false[name] += bad
            found[name] += sum(c.clear and c.better == 0 for c in out.comparisons)
        if crit is not None:
            bad, got = mvt_claims(v, config, clusters, k, crit, effects)
            false["mvt-pooled"] += bad
            found["mvt-pooled"] += got
    share = max(k - 1, 1) * runs if factor != 1.0 else 1
    return {
        n: (false[n] / runs, found[n] / share)
        for n in false
        if crit is not None or n != "mvt-pooled"
    }


def cli_check(seed: int = 5) -> None:
    """One quickstart-shaped data set (5 series x 5 rounds, 3 configurations, c1 and c2 1.3x
    slower than c0) through ``benchlang import`` + ``benchlang analyze``."""
    from benchlang.cli import main

    config, clusters = design(5, 5, 3)
    rng = np.random.default_rng(seed)
    v = values(rng, config, clusters, 3, np.array([0.0, math.log(1.3), math.log(1.3)]))
    rows = ["test,order,run_seq,position,value,series"]
    for x in range(config.size):
        s, r = clusters[x]
        rows.append(f"c{config[x]},random,{s * 5 + r},{x % 3},{v[x]:.6f},{s}")
    for name, kw in RULES.items():
        out = rank(v, config, clusters, level_names=["series", "round"], seed=0, **kw)
        shown = ", ".join(
            f"c{c.worse}/c{c.better} {c.ratio:.2f} [{c.lower:.2f}, {c.upper:.2f}]"
            for c in out.comparisons
        )
        print(f"rank {name}: {shown}")
    with tempfile.TemporaryDirectory() as tmp:
        csv, store = Path(tmp) / "quick.csv", Path(tmp) / "quick.sqlite"
        csv.write_text("\n".join(rows) + "\n")
        quiet = io.StringIO()
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            assert (
                main(["import", str(csv), "--store", str(store), "--series-column", "series"]) == 0
            )
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            main(["analyze", str(store)])
        lines = text.getvalue().splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("Ranking"))
        print("\n".join(lines[start : start + 5]))


def cli_rates(runs: int, seed: int = 11) -> None:
    """The rates as a reader meets them: quickstart-shaped data sets (5 series x 5 rounds, 3
    configurations; also with c2 missing from 2 series) each through ``benchlang import`` +
    ``benchlang analyze --json``, a run counted when its headline ranking states any clear
    comparison: A/A (all equal) and power (c1 and c2 1.2x slower than c0)."""
    import json

    from benchlang.cli import main

    se = math.sqrt(0.05 * 0.95 / runs)
    print(f"through the CLI, {runs} data sets a row (MC SE {100 * se:.1f} points at 5%)")
    print("| layout | A/A: runs with a claim | 1.2x: comparisons found |")
    print("| --- | ---: | ---: |")
    for missing in (False, True):
        config, clusters = design(5, 5, 3)
        keep = ~((config == 2) & (clusters[:, 0] < 2)) if missing else config >= 0
        config, clusters = config[keep], clusters[keep]
        rates = []
        for effect in (0.0, math.log(1.2)):
            hits = total = 0
            for r in range(runs):
                rng = np.random.default_rng(seed * 100_003 + r)
                v = values(rng, config, clusters, 3, np.array([0.0, effect, effect]))
                rows = ["test,order,run_seq,position,value,series"]
                for x in range(config.size):
                    s, rnd = clusters[x]
                    rows.append(f"c{config[x]},random,{s * 5 + rnd},{x % 3},{v[x]:.6f},{s}")
                with tempfile.TemporaryDirectory() as tmp:
                    csv, store = Path(tmp) / "q.csv", Path(tmp) / "q.sqlite"
                    csv.write_text("\n".join(rows) + "\n")
                    out = io.StringIO()
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                        main(
                            ["import", str(csv), "--store", str(store), "--series-column", "series"]
                        )
                    out = io.StringIO()
                    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
                        main(["analyze", str(store), "--json"])
                doc = json.loads(out.getvalue())
                clear = [
                    c["clear"]
                    for h in doc["headline"]
                    for rk in h["rankings"]
                    for c in rk["comparisons"]
                ]
                if effect == 0.0:
                    hits += any(clear)
                    total += 1
                else:
                    hits += sum(clear)
                    total += 2
            rates.append(100.0 * hits / total)
        name = "c2 missing from 2 of 5 series" if missing else "every configuration in every series"
        print(f"| {name} | {rates[0]:.1f}% | {rates[1]:.1f}% |")


def rule_table(runs: int, power_runs: int, k: int, missing: bool) -> None:
    """A/A and 1.05x power of ``rank``'s default rule per (G, rounds)."""
    se = math.sqrt(0.05 * 0.95 / runs)
    print(
        f"rank()'s default rule, k = {k}{', configuration k-1 missing from series 0' * missing}; "
        f"A/A {runs} runs (MC SE {100 * se:.1f} points at 5%), power 1.05x {power_runs} runs"
    )
    print("| G | rounds | path | A/A any claim | power 1.05x |")
    for g, rounds in ((15, 4), (16, 4), (15, 5), (16, 5), (20, 5), (30, 5)):
        config, clusters = design(g, rounds, k)
        keep = ~((config == k - 1) & (clusters[:, 0] == 0)) if missing else config >= 0
        config, clusters = config[keep], clusters[keep]
        out: dict[float, float] = {}
        path = ""
        for factor, n in ((1.0, runs), (1.05, power_runs)):
            effects = np.zeros(k)
            effects[1:] = math.log(factor)
            hits = 0
            for r in range(n):
                rng = np.random.default_rng([7, g, rounds, k, int(1000 * factor), r])
                v = values(rng, config, clusters, k, effects)
                res = rank(v, config, clusters, level_names=["series", "round"], seed=r)
                path = "t" if res.family.df is not None else "bootstrap"
                if factor == 1.0:
                    hits += any(c.clear for c in res.comparisons)
                else:
                    hits += sum(c.clear and c.better == 0 for c in res.comparisons)
            out[factor] = hits / (n if factor == 1.0 else n * (k - 1))
        print(f"| {g} | {rounds} | {path} | {100 * out[1.0]:.1f}% | {100 * out[1.05]:.1f}% |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", type=int, nargs="+", default=[2, 3, 5, 10])
    ap.add_argument("--series", type=int, nargs="+", default=list(SERIES))
    ap.add_argument("--runs", type=int, default=1000, help="A/A data sets a cell")
    ap.add_argument("--power-runs", type=int, default=400, help="data sets a power cell")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--hetero", action="store_true", help="A/A only, configuration 0 noisier")
    ap.add_argument("--cli", action="store_true")
    ap.add_argument("--cli-rates", type=int, metavar="N", help="N data sets a row through the CLI")
    ap.add_argument("--rule", action="store_true", help="rank()'s default rule, G = 15-30")
    ap.add_argument("--missing", action="store_true", help="with --rule: a configuration missing")
    a = ap.parse_args()
    if a.cli:
        cli_check()
        return
    if a.cli_rates:
        cli_rates(a.cli_rates)
        return
    if a.rule:
        rule_table(a.runs, a.power_runs, a.k[0] if a.k != [2, 3, 5, 10] else 3, a.missing)
        return
    rules = dict(RULES)
    se = math.sqrt(0.05 * 0.95 / a.runs)
    print(
        f"{a.rounds} rounds a series; A/A {a.runs} runs a cell (MC SE {100 * se:.1f} points at 5%),"
        f" power {a.power_runs} runs; {'configuration 0 noisier x3' if a.hetero else 'exchangeable'}"
    )
    names = [*rules, "mvt-pooled"]
    print(
        "| G | k | "
        + " | ".join(f"false {n}" for n in names)
        + " | "
        + (
            ""
            if a.hetero
            else " | ".join(f"1.1x {n}" for n in names[:3])
            + " | "
            + " | ".join(f"1.2x {n}" for n in names[:3])
            + " |"
        )
    )
    for k in a.k:
        for g in a.series:
            t0 = time.perf_counter()
            used = rules if g >= 5 else {n: kw for n, kw in rules.items() if n != "boot5"}
            aa = cell(g, a.rounds, k, 1.0, a.runs, used, 1, a.hetero)
            aa.setdefault("boot5", aa["t-bonf"])  # below 5 units the rule before is the t
            row = [f"{100 * aa[n][0]:.1f}%" if n in aa else "-" for n in names]
            if not a.hetero:
                for f in (1.1, 1.2):
                    pw = cell(g, a.rounds, k, f, a.power_runs, used, 2)
                    pw.setdefault("boot5", pw["t-bonf"])
                    row += [f"{100 * pw[n][1]:.1f}%" for n in names[:3]]
            print(
                f"| {g} | {k} | " + " | ".join(row) + f" |  ({time.perf_counter() - t0:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
