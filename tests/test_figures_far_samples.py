"""A far sample never flattens a `convergence` panel: the panel is cut to
the bulk of the samples and the test's lines, the far sample marked at the edge and named in
the notes (stats.figure_convergence.far_outside); the legend is never wider than the figure."""

from __future__ import annotations

import numpy as np

from benchlang.stats.figure_convergence import far_outside
from tests.figure_stores import figure_json, levels_of, make_store, run_cli

SPEC = """benchlang 1
experiment conv {
  seed 5
  factor payload in [50, 200]
  benchmark serve {
    run "python3 gen.py {payload}"
    measure latency series from file "lat.csv" column "latency_us"
  }
  metric latency { measure percentile 95 unit "us" trim 10%
    convergence { confidence 95% tolerance 5% } }
  kpi latency { percentile 50 confidence 95% }
  design { runs 5 }
}
"""


def latencies(plan, t) -> dict:
    """600 latencies a trial, ``payload`` plus an exponential tail (mean 5 us); at payload
    200 sample 300 is 60 times the payload (12,000 us): the far sample."""
    base = float(levels_of(plan, t)["payload"])
    y = base + np.random.default_rng(int(plan.trial_seed[t])).exponential(5, 600)
    if base > 100:
        y[300] = base * 60
    return {"latency": y}


def test_only_a_far_sample_cuts_the_panel():
    rng = np.random.default_rng(3)
    y = 200 + rng.exponential(5, 2000)
    assert far_outside(y, np.array([205.0, 210.0])) is None  # an exponential tail is kept
    y[700] = 12_000.0
    view = far_outside(y, np.array([205.0, 210.0]))
    assert (view.above, view.below, view.highest) == (1, 0, 12_000.0)
    rest = np.delete(y, 700)
    assert view.low < rest.min() and rest.max() < view.high < 2 * rest.max()


def test_the_convergence_figure_cuts_the_flattened_panel_and_says_so(tmp_path, capsys):
    """A store of seeded series written for the spec's plan (measuring is not the point)."""
    store, _plan = make_store(tmp_path, "c", SPEC, latencies)
    fig = figure_json(capsys, store, "convergence")
    views = fig["meta"]["y_view"]
    assert list(views) == ["serve[payload=200]"]  # the panel without a far sample is whole
    low, high = views["serve[payload=200]"]
    samples = [r[3] for r in fig["rows"] if r[0] == "serve[payload=200]" and r[1] == "sample"]
    assert sum(v > high for v in samples) == 1 and max(samples) == 12_000.0
    assert sum(low <= v <= high for v in samples) == len(samples) - 1
    assert (
        "serve[payload=200]: 1 far sample outside the drawn range (12,000 us), marked by a "
        "triangle at its edge" in fig["notes"]
    )
    out = tmp_path / "c.svg"
    code, _said, err = run_cli(
        capsys, "figure", store, "convergence", "-o", out, "--style", "paper"
    )
    assert code == 0, err
    assert "tolerance band" in out.read_text()


def test_a_legend_wider_than_the_figure_takes_fewer_columns():
    """Four long entries at 4 columns overran a paper figure ("tolerance ba")."""
    from matplotlib.figure import Figure

    from benchlang.report.figures.render import legend_above

    for paper, size in ((False, (7, 4)), (True, (3.4, 2.6))):
        fig = Figure(figsize=size, layout="constrained")
        ax = fig.subplots()
        names = ["samples", "95th percentile over windows of 900 samples", "slope", "band"]
        handles = [ax.plot([0, 1], [i, i], label=n)[0] for i, n in enumerate(names)]
        legend_above(fig, handles, paper)
        fig.draw_without_rendering()
        box = fig.legends[0].get_window_extent()
        assert len(fig.legends) == 1 and box.x0 >= 0 and box.x1 <= fig.bbox.width
