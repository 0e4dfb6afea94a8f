"""`benchlang order S1 S2 ...`: several stores of one experiment read as sessions, every order
test stratified by session (stats.session_strata: aligned ranks, Hodges & Lehmann 1962, with
Cochran–Mantel–Haenszel statistics permuting within sessions, Landis, Heyman & Koch 1978).
Stores come from `benchlang import` of seeded per-trial CSVs (OrderSage's columns)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from benchlang.stats._special import rankdata
from benchlang.stats.order_dependence import order_dependence
from benchlang.stats.position_effects import carry_over
from benchlang.stats.session_strata import (
    align_sessions,
    session_rounds,
    stratified_correlation,
    stratified_location,
)

NAMES = np.array(["a", "b", "c"])
BASE = np.array([1.0, 1.3, 0.8])


def session_rows(
    rng: np.random.Generator, level: float, rounds: int, orders=None, after_a: float = 0.0
) -> list[tuple[str, int, int, float]]:
    """(configuration, round, position, value) of one session's random-order rounds; ``orders``
    fixes every round's order (else a seeded permutation each); b is ``after_a`` slower right
    after a."""
    rows = []
    for r in range(rounds):
        order = np.asarray(orders) if orders is not None else rng.permutation(3)
        for position, c in enumerate(order.tolist()):
            value = BASE[c] * level * np.exp(rng.normal(0.0, 0.02))
            if c == 1 and position > 0 and order[position - 1] == 0:
                value *= 1.0 + after_a
            rows.append((str(NAMES[c]), r, position, float(value)))
    return rows


def store_of(
    cli, here: Path, name: str, rows, experiment: str = "camp", fixed_rounds: int = 0
) -> Path:
    """A store imported from ``rows``; the first ``fixed_rounds`` rounds are fixed-order ones."""
    csv = here / f"{name}.csv"
    lines = ["test,order,run_seq,position,value"]
    lines += [
        f"{c},{'fixed' if r < fixed_rounds else 'random'},{r},{p},{v:.9g}" for c, r, p, v in rows
    ]
    csv.write_text("\n".join(lines) + "\n")
    store = here / f"{name}.sqlite"
    status, _, err = cli(["import", csv, "--store", store, "--name", experiment], cwd=here)
    assert status == 0, err
    return store


def order_json(cli, stores, here: Path) -> dict:
    status, out, err = cli(["order", *stores, "--json"], cwd=here)
    assert status == 0, err
    assert not err
    doc = json.loads(out, parse_constant=pytest.fail)  # strict: a NaN fails the test
    assert doc["kind"] == "benchlang.order"
    return doc


def arrays(rows_by_session):
    conf = np.array([c for rows in rows_by_session for c, _, _, _ in rows])
    rnd = np.array([r for rows in rows_by_session for _, r, _, _ in rows])
    pos = np.array([p for rows in rows_by_session for _, _, p, _ in rows])
    val = np.array([v for rows in rows_by_session for _, _, _, v in rows])
    sess = np.repeat(np.arange(len(rows_by_session)), [len(r) for r in rows_by_session])
    return val, conf, rnd, pos, sess


def test_one_stratum_is_kruskal_wallis_and_levels_vanish():
    rng = np.random.default_rng(3)
    x = rng.normal(size=40)
    g = rng.integers(0, 3, 40)
    q, p, df = stratified_location(rankdata(x), g, np.zeros(40))
    h = scipy_stats.kruskal(*(x[g == i] for i in range(3)))
    assert (q, p, df) == (pytest.approx(h.statistic), pytest.approx(h.pvalue), 2)
    pos = rng.integers(0, 4, 40)
    r, _, _ = stratified_correlation(rankdata(pos), rankdata(x), np.zeros(40))
    assert r == pytest.approx(scipy_stats.spearmanr(pos, x).statistic)
    session = np.repeat([0, 1], 20)
    shifted = np.exp(x * 0.02) * np.where(session == 1, 1.2, 1.0)
    aligned = align_sessions(shifted, np.zeros(40), session)
    medians = [np.exp(np.median(np.log(aligned[session == s]))) for s in (0, 1)]
    pooled = np.exp(np.median(np.log(shifted)))  # a level is a factor: medians on the log scale
    assert medians[0] == pytest.approx(medians[1]) == pytest.approx(pooled)
    # a group that never varies within a session carries no information: nothing to test
    assert stratified_location(x, session, session)[1:] == (1.0, 0)


def test_a_session_level_shift_makes_no_carry_over_claim(tmp_path, cli_in_process):
    """Session 0 ran every round as a, b, c; session 1 (15% slower) as c, b, a; session 2 in
    random orders. Pooled naively, "b after a" is just "b in the faster session": a carry-over
    and a position effect are claimed. Stratified by session, neither is."""
    rng = np.random.default_rng(11)
    sessions = [
        session_rows(rng, 1.00, 12, orders=[0, 1, 2]),
        session_rows(rng, 1.15, 12, orders=[2, 1, 0]),
        session_rows(rng, 0.95, 12),
    ]
    val, conf, rnd, pos, sess = arrays(sessions)
    naive = carry_over(val, conf, session_rounds(rnd, sess), pos)
    assert naive.carry_over_found  # the trap the stratification closes
    stores = [store_of(cli_in_process, tmp_path, f"s{i}", rows) for i, rows in enumerate(sessions)]
    doc = order_json(cli_in_process, stores, tmp_path)
    assert doc["sessions"] == 3 and "stratified by session" in doc["stratification"]
    assert doc["carry_over"]["sessions"] == 3 and not doc["carry_over"]["carry_over_found"]
    assert not doc["positions"]["position_matters"]
    status, text, _ = cli_in_process(["order", *stores], cwd=tmp_path)
    assert status == 0
    assert "stratified by session" in text and "3 sessions" in text
    assert "verdict: no carry-over found" in text


def test_a_planted_carry_over_is_found_across_sessions(tmp_path, cli_in_process):
    rng = np.random.default_rng(5)
    levels = [1.0, 1.09, 0.93]
    sessions = [session_rows(rng, level, 12, after_a=0.05) for level in levels]
    stores = [store_of(cli_in_process, tmp_path, f"s{i}", rows) for i, rows in enumerate(sessions)]
    doc = order_json(cli_in_process, stores, tmp_path)
    found = {
        (p["configuration"], p["predecessor"])
        for p in doc["carry_over"]["pairs"]
        if p["significant"]
    }
    assert ("b", "a") in found and {c for c, _ in found} == {
        "b"
    }  # b at a round start: never after a
    (strongest,) = [p for p in doc["carry_over"]["strongest"] if p["configuration"] == "b"]
    assert strongest["predecessor"] == "a"
    assert strongest["shift_percent"] == pytest.approx(5.0, abs=2.0)
    status, text, _ = cli_in_process(["order", *stores], cwd=tmp_path)
    assert status == 0 and "verdict: carry-over found: " in text and "b after a" in text


def test_one_store_is_read_as_before(tmp_path, cli_in_process):
    rng = np.random.default_rng(8)
    rows = session_rows(rng, 1.0, 14, after_a=0.05)
    store = store_of(cli_in_process, tmp_path, "one", rows)
    doc = order_json(cli_in_process, [store], tmp_path)
    assert doc["sessions"] == 1 and doc["stratification"] is None
    val, conf, rnd, pos, _ = arrays([rows])
    pair = next(
        p
        for p in doc["carry_over"]["pairs"]
        if (p["configuration"], p["predecessor"]) == ("b", "a")
    )
    b = conf == "b"
    prev = {(r, p): c for c, r, p in zip(conf, rnd, pos, strict=True)}
    after = np.array([prev.get((r, p - 1)) == "a" for r, p in zip(rnd[b], pos[b], strict=True)])
    expected = scipy_stats.mannwhitneyu(val[b][after], val[b][~after], alternative="two-sided")
    assert pair["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    assert pair["median_after"] == pytest.approx(np.median(val[b][after]), rel=1e-6)
    status, text, _ = cli_in_process(["order", store], cwd=tmp_path)
    assert status == 0 and "stratified" not in text


def test_a_store_of_another_experiment_is_refused(tmp_path, cli_in_process):
    rng = np.random.default_rng(2)
    mine = store_of(cli_in_process, tmp_path, "s0", session_rows(rng, 1.0, 6))
    other = store_of(cli_in_process, tmp_path, "o", session_rows(rng, 1.0, 6), "other")
    status, out, err = cli_in_process(["order", mine, other], cwd=tmp_path)
    assert status == 2 and not out
    assert "holds experiment 'other'" in err and "Traceback" not in err


def test_fixed_vs_random_is_stratified_by_session(tmp_path, cli_in_process):
    """OrderSage's fixed-vs-random test over three sessions, one of them (12% slower) run with
    fixed-order rounds only, as a session interrupted before its random rounds: the fixed rounds
    over-represent that session, so pooled as one sample its level reads as an order effect;
    stratified by session it does not."""
    rng = np.random.default_rng(21)

    def both(level: float) -> list[tuple[str, int, int, float]]:
        random = [(c, 4 + r, p, v) for c, r, p, v in session_rows(rng, level, 12)]
        return session_rows(rng, level, 4, orders=[0, 1, 2]) + random

    sessions = [session_rows(rng, 1.12, 16, orders=[0, 1, 2]), both(1.0), both(0.97)]
    fixed_rounds = [16, 4, 4]
    val, conf, rnd, _, sess = arrays(sessions)
    kinds = np.where(rnd < np.array(fixed_rounds)[sess], "fixed", "random")
    assert order_dependence(val, conf, kinds).order_matters  # pooled naively: the trap
    stores = [
        store_of(cli_in_process, tmp_path, f"s{i}", rows, fixed_rounds=fixed_rounds[i])
        for i, rows in enumerate(sessions)
    ]
    doc = order_json(cli_in_process, stores, tmp_path)
    rows = doc["configurations"]
    assert [r["configuration"] for r in rows] == ["a", "b", "c"]
    assert all(r["compared"] and not r["significant"] for r in rows)
    assert doc["tally"]["significant"] == 0 and doc["sessions"] == 3
    status, text, _ = cli_in_process(["order", *stores], cwd=tmp_path)
    assert status == 0 and "stratified by 3 sessions" in text
