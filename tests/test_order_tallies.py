"""OrderSage's tallies (Duplyakin et al., ATC 2023, Table 2 and Fig. 6): `benchlang order`
prints "k of m configurations significant (x%)" and the number of configurations per
CI-overlap case, in text and in --json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.stats.order_dependence import order_dependence

DATA = Path("/work/shared/data/ordersage")
if not DATA.is_dir():
    DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ordersage"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="OrderSage case-study data not present")


def test_tally_counts_the_rows_it_summarises():
    """Seeded data with an order effect planted in 3 of 8 configurations, and one
    configuration with a single fixed-order trial (not compared)."""
    rng = np.random.default_rng(11)
    values, names, orders = [], [], []
    for c in range(8):
        n_fixed = 1 if c == 7 else 30
        for order, n in (("fixed", n_fixed), ("random", 30)):
            shift = 1.0 if c < 3 and order == "fixed" else 0.0
            values.append(rng.normal(10.0 + shift, 0.5, n))
            names += [f"cfg{c}"] * n
            orders += [order] * n
    result = order_dependence(np.concatenate(values), np.array(names), np.array(orders))
    tally = result.tally
    compared = [c for c in result.configurations if c.compared]
    assert tally.compared == len(compared) == result.m == 7
    assert tally.not_compared == 1
    assert tally.significant == len(result.significant) == 3
    assert tally.percent == pytest.approx(300 / 7)
    assert dict(tally.cases) == {k: sum(c.ci_case == k for c in compared) for k in (1, 2, 3)}
    assert sum(dict(tally.cases).values()) == 7
    assert tally.sentence() == "3 of 7 configurations significant (42.9%)"
    assert result.to_dict()["tally"]["cases"] == {str(k): v for k, v in tally.cases}


def test_nothing_compared_has_a_null_percent_with_its_reason():
    result = order_dependence(np.array([1.0, 2.0, 3.0]), np.array(["a"] * 3), ["fixed"] * 3)
    out = result.tally.to_dict()
    assert out["compared"] == 0 and out["percent_significant"] is None
    assert out["null_reasons"]["percent_significant"] == "no configuration compared"
    json.dumps(out, allow_nan=False)


@needs_data
def test_order_prints_the_tallies_of_table3(tmp_path, capsys):
    """The paper's memcached data (Table 3: get_hits significant, cases 2, 2, 3) imported into
    a store and read by `benchlang order`, text and --json."""
    store = tmp_path / "t3.sqlite"
    assert main(["import", str(DATA / "table3_memcached.csv"), "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["order", str(store)]) == 0
    text = capsys.readouterr().out
    assert "1 of 3 configurations significant (33.3%)" in text
    assert "configurations per CI case (OrderSage Fig. 6): case 1: 0, case 2: 2, case 3: 1" in text
    assert main(["order", str(store), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["tally"] == {
        "compared": 3,
        "significant": 1,
        "percent_significant": pytest.approx(100 / 3),
        "cases": {"1": 0, "2": 2, "3": 1},
        "not_compared": 0,
        "summary": "1 of 3 configurations significant (33.3%)",
    }
    assert [r["ci_case"] for r in doc["configurations"]] == [2, 2, 3]
