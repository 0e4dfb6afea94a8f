"""Two-sided KPIs (`kpi M { ... bound both }`) drawn as intervals in every figure that shows a
KPI: `series-kpis` (TriScale Fig. 3b), `variability` (Figs. 3c, 8) and `kpi-scatter` (Fig. 1b)
(item 2). Each trial's values are drawn from its seed (``values``, what the spec's command
prints, written for the spec's real plan: measuring is not the point), and each series' interval is recomputed here from the trials the figure carries: the equal-tailed
order-statistic interval of the median, each side at (1 + C) / 2 (Hahn & Meeker, Statistical
Intervals, §5.2; Le Boudec, Performance Evaluation, §2.2.1)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.figure_stores import figure_json, levels_of, make_store, run_cli

SPEC = """benchlang 1
experiment two {
  seed 7
  factor base in [1000, 3000]
  benchmark b {
    run "echo v=$(( BENCHLANG_SEED % 997 + {base} )) w=$(( BENCHLANG_SEED % 991 + 5000 ))"
    measure t from stdout regex "v=([0-9]+)"
    measure w from stdout regex "w=([0-9]+)"
  }
  metric t { measure mean unit "ms" }
  metric w { measure mean unit "ops" better higher }
  kpi t { percentile 50 confidence 95% BOUND }
  kpi w { percentile 50 confidence 90% BOUND }
  variability t { percentile 25 confidence 75% }
  design { runs 9 series 5 }
}
"""


def values(plan, t) -> dict:
    """What the spec's command prints for trial ``t`` (BENCHLANG_SEED is its trial seed)."""
    seed = int(plan.trial_seed[t])
    return {"t": float(seed % 997 + levels_of(plan, t)["base"]), "w": float(seed % 991 + 5000)}


def _store(where: Path, bound: str) -> Path:
    return make_store(where, "two", SPEC.replace("BOUND", bound), values)[0]


@pytest.fixture(scope="module")
def both(tmp_path_factory) -> Path:
    return _store(tmp_path_factory.mktemp("both"), "bound both")


def _interval(values: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """[X_(l), X_(u)] of the median: l the largest rank with P(Bin(n, 1/2) >= l) >= side, u the
    smallest with P(Bin(n, 1/2) <= u - 1) >= side, side = (1 + C) / 2; and the sample median."""
    from scipy.stats import binom

    n, side = values.size, (1 + confidence) / 2
    ordered = np.sort(values)
    low = max(k for k in range(1, n + 1) if binom.sf(k - 1, n, 0.5) >= side)
    high = min(k for k in range(1, n + 1) if binom.cdf(k - 1, n, 0.5) >= side)
    assert binom.cdf(high - 1, n, 0.5) - binom.cdf(low - 1, n, 0.5) >= confidence
    return float(np.median(values)), float(ordered[low - 1]), float(ordered[high - 1])


def _trials(fig: dict) -> dict[tuple[str, float], np.ndarray]:
    out: dict[tuple[str, float], list[float]] = {}
    for label, part, x, y, _lo, _hi in fig["rows"]:
        if part == "trial":
            out.setdefault((label, x), []).append(y)
    return {k: np.array(v) for k, v in out.items()}


def test_series_kpis_draws_each_series_interval(both, capsys):
    fig = figure_json(capsys, both, "series-kpis")
    trials = _trials(fig)
    kpis = [r for r in fig["rows"] if r[1] == "KPI"]
    assert len(kpis) == 10 and {len(v) for v in trials.values()} == {9}
    for label, _part, series, value, low, high in kpis:
        median, lo, hi = _interval(trials[(label, series)], 0.95)
        assert (value, low, high) == pytest.approx((median, lo, hi))
        assert low < value < high
    assert "the sample p50 with its 95% two-sided confidence interval" in fig["caption"]
    assert "bar: the interval" in fig["caption"] and "both bound" not in fig["caption"]


def test_variability_and_kpi_scatter_draw_the_same_intervals(both, capsys):
    kpis = figure_json(capsys, both, "series-kpis")["rows"]
    series = {(r[0], r[2]): r[3:] for r in kpis if r[1] == "KPI"}
    var = figure_json(capsys, both, "variability")
    rows = [r for r in var["rows"] if r[1] == "series KPI"]
    assert {(r[0], r[2]): r[3:] for r in rows} == series
    assert "thin bars: each series' interval" in var["caption"]
    assert "95% two-sided confidence interval" in var["caption"]
    scatter = figure_json(capsys, both, "kpi-scatter")
    points = [r for r in scatter["rows"] if r[1].startswith("series ")]
    assert len(points) == 10
    for label, part, x, _y, x_low, x_high, y_low, y_high in points:
        assert (x, x_low, x_high) == pytest.approx(series[(label, float(part.split()[1]))])
        assert y_low < y_high
    caption = scatter["caption"]
    assert "t: the sample p50 with its 95% two-sided confidence interval" in caption
    assert "w: the sample p50 with its 90% two-sided confidence interval" in caption


def test_the_svg_carries_the_intervals_and_the_caption(both, capsys, tmp_path):
    """One capped bar collection per configuration (matplotlib's errorbar), the caption in the
    file's metadata."""
    out = tmp_path / "kpis.svg"
    code, _said, err = run_cli(capsys, "figure", both, "series-kpis", "-o", out)
    assert code == 0, err
    svg = out.read_text()
    assert "two-sided confidence interval" in svg
    assert svg.count('id="LineCollection_') == 2


def test_a_one_sided_kpi_draws_no_interval(tmp_path, capsys):
    store = _store(tmp_path, "bound upper")
    fig = figure_json(capsys, store, "series-kpis")
    kpis = [r for r in fig["rows"] if r[1] == "KPI"]
    assert kpis and all(r[4] is None and r[5] is None for r in kpis)
    trials = _trials(fig)
    for label, _part, series, value, _lo, _hi in kpis:
        values = np.sort(trials[(label, series)])
        assert value in values and value >= np.median(values)  # an order statistic above
    assert "the upper bound of the p50 at 95% confidence; large marker)" in fig["caption"]
    assert json.dumps(fig)  # strict JSON: null, not NaN
    code, _said, err = run_cli(capsys, "figure", store, "series-kpis", "-o", tmp_path / "k.svg")
    assert code == 0, err
    assert 'id="LineCollection_' not in (tmp_path / "k.svg").read_text()
