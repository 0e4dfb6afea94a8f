"""Position-in-round and carry-over tests on random-order rounds (benchlang's extension)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest

from benchlang.report.order import render_carry_over_table, render_position_table
from benchlang.stats.position_effects import START, carry_over, position_effect, predecessors

CONFS = np.array(["a", "b", "c", "d"])


def random_rounds(n_rounds: int, seed: int):
    """Flat per-trial arrays for n_rounds fresh seeded permutations of CONFS."""
    rng = np.random.default_rng(seed)
    k = CONFS.size
    perm = rng.permuted(np.tile(np.arange(k), (n_rounds, 1)), axis=1)
    conf_code = perm.ravel()
    position = np.tile(np.arange(k), n_rounds)
    round_id = np.repeat(np.arange(n_rounds), k)
    noise = rng.normal(scale=1.0, size=conf_code.size)
    values = 100.0 + 10.0 * conf_code + noise
    return values, CONFS[conf_code], round_id, position, conf_code


def test_planted_position_effect_is_found_only_where_planted():
    values, conf, _, position, code = random_rounds(60, seed=11)
    values = values + np.where(code == 2, 3.0 * position, 0.0)  # "c" slows down later in a round
    result = position_effect(values, conf, position, alpha=0.05)
    by = {r.configuration: r for r in result.configurations}
    assert result.m == 4 and result.threshold == 0.05 / 8
    assert by["c"].significant and by["c"].spearman_rho > 0.5
    assert [r.configuration for r in result.configurations if r.significant] == ["c"]
    assert result.position_matters


def test_no_position_effect_without_one():
    values, conf, _, position, _ = random_rounds(60, seed=12)
    result = position_effect(values, conf, position)
    assert not result.position_matters
    assert all(r.n == 60 and r.n_positions == 4 for r in result.configurations)


def test_position_effect_filters_to_random_rounds():
    values, conf, _, position, _ = random_rounds(30, seed=13)
    order = np.where(np.arange(values.size) < 40, "fixed", "random")
    result = position_effect(values, conf, position, order=order)
    assert sum(r.n for r in result.configurations) == values.size - 40


def test_planted_carry_over_names_the_predecessor():
    values, conf, round_id, position, _ = random_rounds(80, seed=21)
    pred = predecessors(conf, round_id, position)
    values = values + np.where((conf == "d") & (pred == "a"), 8.0, 0.0)  # "a" leaves a warm cache
    result = carry_over(values, conf, round_id, position, alpha=0.05)
    by = {p.configuration: p for p in result.strongest}
    assert by["d"].predecessor == "a"
    assert by["d"].significant
    assert by["d"].shift > 5.0
    # One-vs-rest: other predecessors of "d" may look shifted the other way; no other
    # configuration may be flagged.
    assert {p.configuration for p in result.pairs if p.significant} == {"d"}
    assert all(p.shift < 0 for p in result.pairs if p.configuration == "d" and p.predecessor != "a")
    assert result.n_tests == len(result.pairs) and result.threshold == 0.05 / result.n_tests


def test_no_carry_over_without_one():
    values, conf, round_id, position, _ = random_rounds(80, seed=22)
    result = carry_over(values, conf, round_id, position)
    assert not result.carry_over_found
    # Each configuration: three other predecessors plus the round start.
    assert result.n_tests == 4 * 4


def test_predecessors_handle_round_start_and_gaps():
    conf = np.array(["b", "a", "c", "a", "c"])
    round_id = np.array([0, 0, 0, 1, 1])
    position = np.array([1, 0, 2, 0, 2])  # round 1 lost its position-1 trial
    assert predecessors(conf, round_id, position).tolist() == ["a", START, "b", START, ""]


def test_renderers_and_json():
    values, conf, round_id, position, _ = random_rounds(20, seed=5)
    pe = position_effect(values, conf, position)
    co = carry_over(values, conf, round_id, position)
    out = io.StringIO()
    render_position_table(pe, out)
    render_carry_over_table(co, out)
    assert "Spearman" in out.getvalue() and "verdict: no carry-over found" in out.getvalue()
    json.dumps([pe.to_dict(), co.to_dict()], allow_nan=False)


def test_memcached_random_rounds_show_get_hits_position_effect():
    """Table 3 data (Duplyakin et al. 2023): the random runs alone point at get_hits."""
    path = Path("/work/shared/data/ordersage/table3_memcached.csv")
    if not path.exists():
        pytest.skip("OrderSage case-study data not present")
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    values = np.array([float(r["value"]) for r in rows])
    conf = np.array([r["test"] for r in rows])
    order = np.array([r["order"] for r in rows])
    position = np.array([int(r["position"]) for r in rows])
    result = position_effect(values, conf, position, order=order)
    assert [r.configuration for r in result.configurations if r.significant] == ["get_hits"]
    assert all(r.n == 50 for r in result.configurations)
