"""`benchlang order` over several sessions: false claims of an order effect when the sessions'
levels differ, pooled naively or stratified by session (docs/statistics.md, "Order tests
across sessions"; issue 48 item 5).

A/A campaigns: 3 configurations in random-order rounds (``--rounds`` per session, each round a
seeded permutation), ``S`` sessions whose level is a lognormal factor (sigma 5% or 10%), trials
with 2% lognormal noise and no order effect. Each dataset goes through the statistics the
command calls (``stats.position_effects.position_effect`` and ``carry_over``; for the
fixed-vs-random test, ``stats.order_dependence.order_dependence`` on half fixed, half random
rounds), once with the sessions pooled as one sample (rounds still kept apart per session) and
once with ``session=`` (each session x configuration median removed: aligned ranks, Hodges &
Lehmann 1962). A claim is the family's verdict at alpha 5% (Bonferroni inside each test, as
the command prints it). Power: the same campaigns with a real carry-over (configuration b runs
``--effect`` slower right after a).

``--cli N`` also imports N seeded A/A campaigns (CSV per session, ``benchlang import``) and N
with the carry-over, and runs the real ``benchlang order S1 S2 S3 --json`` on each.

    nice -n 10 python benchmarks/sim_order_sessions.py [--datasets 1000] [--cli 50]
    (``--datasets 0 --cli 50``: the CLI check alone)
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import tempfile
from pathlib import Path

import numpy as np

from benchlang.stats.order_dependence import order_dependence
from benchlang.stats.position_effects import carry_over, position_effect
from benchlang.stats.session_strata import session_rounds

CONFIGURATIONS = np.array(["a", "b", "c"])
BASE = np.array([1.0, 1.3, 0.8])


def campaign(
    rng: np.random.Generator,
    sessions: int,
    rounds: int,
    sigma: float,
    effect: float = 0.0,
    fixed_half: bool = False,
    lopsided: bool = False,
) -> dict[str, np.ndarray]:
    """Per-trial arrays of one campaign; rounds numbered from 0 in every session, as stores are.

    ``lopsided``: session 0 lost trials, as a store of a real campaign does: with
    ``fixed_half`` its random-order rounds (the session was interrupted after its fixed
    rounds), else every trial of configuration c (it failed there: the next trial's
    predecessor is then unknown)."""
    k = CONFIGURATIONS.size
    n_rounds = sessions * rounds
    perm = np.argsort(rng.random((n_rounds, k)), axis=1)
    kind = np.full(n_rounds, "random")
    if fixed_half:
        kind[1::2] = "fixed"
        perm[1::2] = np.arange(k)
    conf = perm.ravel()
    position = np.tile(np.arange(k), n_rounds)
    session = np.repeat(np.arange(sessions), rounds * k)
    round_id = np.tile(np.repeat(np.arange(rounds), k), sessions)
    previous = np.concatenate(([-1], conf[:-1]))
    after_a = (position > 0) & (previous == 0) & (conf == 1)
    level = np.exp(rng.normal(0.0, sigma, sessions))[session]
    values = BASE[conf] * level * np.exp(rng.normal(0.0, 0.02, conf.size))
    values = values * np.where(after_a, 1.0 + effect, 1.0)
    d = {
        "values": values,
        "configuration": CONFIGURATIONS[conf],
        "position": position,
        "round": round_id,
        "session": session,
        "order": np.repeat(kind, k),
    }
    if lopsided:
        lost = (session == 0) & ((d["order"] == "random") if fixed_half else (conf == 2))
        d = {name: column[~lost] for name, column in d.items()}
    return d


def claims(d: dict[str, np.ndarray], stratified: bool, alpha: float = 0.05) -> tuple[bool, ...]:
    """(position claimed, carry-over claimed) for one random-order campaign."""
    session = d["session"] if stratified else None
    rounds = session_rounds(d["round"], d["session"])  # naive pooling still keeps rounds apart
    pos = position_effect(d["values"], d["configuration"], d["position"], alpha, session=session)
    carry = carry_over(
        d["values"], d["configuration"], rounds, d["position"], alpha, session=session
    )
    return pos.position_matters, carry.carry_over_found


def fixed_random_claim(d: dict[str, np.ndarray], stratified: bool, alpha: float = 0.05) -> bool:
    session = d["session"] if stratified else None
    return order_dependence(
        d["values"], d["configuration"], d["order"], alpha, session=session
    ).order_matters


def interval(k: int, n: int) -> str:
    """A rate with its 95% Wilson interval (Wilson, JASA 1927)."""
    z = 1.959963984540054
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * p:5.1f}% [{100 * max(0.0, centre - half):4.1f}, {100 * min(1.0, centre + half):4.1f}]"


def table(datasets: int, rounds: int, effect: float, seed: int) -> None:
    print(
        f"A/A: 3 configurations, {rounds} rounds per session (fixed-vs-random: half fixed), "
        f"trials 2% noise, {datasets} datasets per row; claims at alpha 5% (95% Wilson intervals)"
    )
    print("lopsided: session 0 lost configuration c's trials (fixed-vs-random: its random rounds)")
    header = (
        f"{'sessions':>8} {'sigma':>6} {'sessions are':>12} | {'position naive':>22} "
        f"{'position stratified':>22} | {'carry naive':>22} {'carry stratified':>22} | "
        f"{'fixed-vs-random naive':>22} {'stratified':>22}"
    )
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(seed)
    for lopsided in (False, True):
        for sessions in (3, 5):
            for sigma in (0.05, 0.10):
                counts = np.zeros(6, dtype=int)
                for _ in range(datasets):
                    d = campaign(rng, sessions, rounds, sigma, lopsided=lopsided)
                    counts[[0, 2]] += claims(d, False)
                    counts[[1, 3]] += claims(d, True)
                    f = campaign(rng, sessions, rounds, sigma, fixed_half=True, lopsided=lopsided)
                    counts[4] += fixed_random_claim(f, False)
                    counts[5] += fixed_random_claim(f, True)
                cells = [interval(int(c), datasets) for c in counts]
                shape = "lopsided" if lopsided else "balanced"
                print(
                    f"{sessions:>8} {sigma:>6.0%} {shape:>12} | {cells[0]:>22} {cells[1]:>22} | "
                    f"{cells[2]:>22} {cells[3]:>22} | {cells[4]:>22} {cells[5]:>22}"
                )
    print()
    print(f"Power: b runs {effect:+.0%} right after a (2% noise); carry-over claimed")
    print(f"{'sessions':>8} {'sigma':>6} | {'carry naive':>22} {'carry stratified':>22}")
    for sessions in (3, 5):
        for sigma in (0.05, 0.10):
            counts = np.zeros(2, dtype=int)
            for _ in range(datasets):
                d = campaign(rng, sessions, rounds, sigma, effect=effect)
                counts[0] += claims(d, False)[1]
                counts[1] += claims(d, True)[1]
            print(
                f"{sessions:>8} {sigma:>6.0%} | {interval(int(counts[0]), datasets):>22} "
                f"{interval(int(counts[1]), datasets):>22}"
            )


def write_csv(path: Path, d: dict[str, np.ndarray], lo: int, hi: int) -> None:
    lines = ["test,order,run_seq,position,value"]
    for i in range(lo, hi):
        lines.append(
            f"{d['configuration'][i]},{d['order'][i]},{d['round'][i]},{d['position'][i]},"
            f"{d['values'][i]:.9g}"
        )
    path.write_text("\n".join(lines) + "\n")


def cli(n: int, rounds: int, effect: float, seed: int) -> None:
    """``benchlang import`` + ``benchlang order S1 S2 S3 --json``, in this process."""
    from benchlang.cli import main

    rng = np.random.default_rng(seed + 1)
    sessions = 3
    print()
    print(f"Through the CLI: {sessions} sessions (sigma 10%), {rounds} rounds each, {n} campaigns")
    print(f"{'data':>24} | {'carry-over claimed':>22} {'position claimed':>22}")
    for label, eff in (("A/A", 0.0), (f"b {effect:+.0%} after a", effect)):
        found = np.zeros(2, dtype=int)
        for _ in range(n):
            d = campaign(rng, sessions, rounds, 0.10, effect=eff)
            with tempfile.TemporaryDirectory() as tmp:
                stores = []
                per = rounds * CONFIGURATIONS.size
                for s in range(sessions):
                    csv = Path(tmp) / f"s{s}.csv"
                    write_csv(csv, d, s * per, (s + 1) * per)
                    store = str(Path(tmp) / f"s{s}.sqlite")
                    with contextlib.redirect_stdout(io.StringIO()):
                        status = main(["import", str(csv), "--store", store, "--name", "aa"])
                    assert status == 0
                    stores.append(store)
                out = io.StringIO()
                with contextlib.redirect_stdout(out):
                    status = main(["order", *stores, "--json"])
                assert status == 0
                doc = json.loads(out.getvalue())
                found += [
                    doc["carry_over"]["carry_over_found"],
                    doc["positions"]["position_matters"],
                ]
        print(f"{label:>24} | {interval(int(found[0]), n):>22} {interval(int(found[1]), n):>22}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--effect", type=float, default=0.03)
    parser.add_argument("--cli", type=int, default=0, help="campaigns through the CLI per row")
    parser.add_argument("--seed", type=int, default=48)
    args = parser.parse_args()
    if args.datasets:  # 0: only the CLI check
        table(args.datasets, args.rounds, args.effect, args.seed)
    if args.cli:
        cli(args.cli, args.rounds, args.effect, args.seed)


if __name__ == "__main__":
    main()
