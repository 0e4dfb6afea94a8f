"""The ANOVA table as DataMill reports it (mean squares, R²) against published numbers, and the
per-host breakdown (stats/anova.py; DataMill, de Oliveira et al. ICPE 2013, §5)."""

from __future__ import annotations

import numpy as np
import pytest

from benchlang.stats.anova import anova, host_breakdown

# Montgomery, Design and Analysis of Experiments (8th ed.), Example 3.1: etch rate (Å/min) at
# four RF power levels, five wafers each; his Table 3.4 is the ANOVA below.
ETCH = [
    575,
    542,
    530,
    539,
    570,
    565,
    593,
    590,
    579,
    610,
    600,
    651,
    610,
    637,
    629,
    725,
    700,
    715,
    685,
    710,
]
POWER = [160] * 5 + [180] * 5 + [200] * 5 + [220] * 5


def test_montgomery_table_3_4():
    a = anova(np.array(ETCH, float), {"power": POWER}, ["power"], "")
    power, residual = a.rows
    assert (power.df, residual.df) == (3, 16)
    assert power.sum_sq == pytest.approx(66870.55)
    assert residual.sum_sq == pytest.approx(5339.20)
    assert power.mean_sq == pytest.approx(22290.18, abs=0.01)
    assert residual.mean_sq == pytest.approx(333.70, abs=0.01)
    assert power.f == pytest.approx(66.80, abs=0.01)
    assert a.r_squared == pytest.approx(66870.55 / 72209.75)
    assert a.adj_r_squared == pytest.approx(1 - (5339.20 / 16) / (72209.75 / 19))
    assert a.to_dict()["r_squared"] == a.r_squared


def test_host_breakdown_on_seeded_values():
    rng = np.random.default_rng(7)
    y = np.concatenate([rng.normal(10, 1, 50), rng.normal(13, 1, 50), [np.nan]])
    hosts = ["b"] * 50 + ["a"] * 50 + ["a"]
    found = host_breakdown(y, hosts)
    a, b = found.rows
    assert (a.host, a.n, b.host, b.n) == ("a", 50, "b", 50)  # sorted, the NaN left out
    assert a.mean == pytest.approx(np.mean(y[50:100])) and b.sd == pytest.approx(
        np.std(y[:50], ddof=1)
    )
    one_way = anova(y[:100], {"host": hosts[:100]}, ["host"], "")
    assert found.between_share == pytest.approx(one_way.rows[0].eta_squared)
    assert found.between_share > 0.5
