"""TriScale's CDF figures (Figs. 7 and 10): the step line drawn from fewer points is the same
line to within one slice of its range, and the bands are built once for both figures."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchlang.stats.cdf import cdf_band
from benchlang.stats.figure_cdf import STEP_COLUMNS, cdf, cdf_parts, step_points
from benchlang.stats.figure_data import ecdf

ROOT = Path(__file__).resolve().parents[1]


def _samples() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [
        rng.lognormal(0.0, 1.0, 10_000),
        rng.normal(5.0, 1.0, 50_000),
        np.round(rng.normal(0.0, 1.0, 10_000), 2),  # ties: many equal values
    ]


@pytest.mark.parametrize("which", range(3))
def test_kept_steps_bracket_every_step_within_one_slice(which: int) -> None:
    x, p = ecdf(_samples()[which])
    keep = step_points(x)
    assert keep[0] == 0 and keep[-1] == x.size - 1
    assert keep.size < x.size and keep.size <= 2 * STEP_COLUMNS + 1
    slice_width = (x[-1] - x[0]) / STEP_COLUMNS
    i = np.arange(x.size)
    a = keep[np.searchsorted(keep, i, side="right") - 1]  # the last kept step at or before i
    b = keep[np.searchsorted(keep, i, side="left")]  # the first kept step at or after it
    assert np.all(p[a] <= p) and np.all(p <= p[b])
    assert np.all(x[b] - x[a] <= slice_width * (1 + 1e-9))


def test_few_values_are_all_kept() -> None:
    x, _ = ecdf(np.arange(100.0))
    assert np.array_equal(step_points(x), np.arange(100))
    same, _ = ecdf(np.full(5_000, 3.0))
    assert step_points(same).tolist() == [0, 4_999]


def test_the_drawn_line_differs_only_on_its_edges() -> None:
    """Rendered at the report's width and resolution (7 in at 200 dpi), the kept steps and
    every step differ in under half a percent of the pixels (anti-aliased edges); the 300
    values evenly spaced in rank drawn before differed in about 1%."""
    matplotlib = pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    x, p = ecdf(_samples()[0])
    keep = step_points(x)
    images = []
    with matplotlib.rc_context({"path.simplify": False}):
        for xs, ps in ((x, p), (x[keep], p[keep])):
            fig = Figure(figsize=(7, 2), dpi=200)
            ax = fig.add_axes((0, 0, 1, 1))
            ax.set_axis_off()
            ax.step(xs, ps, where="post", lw=1.2)
            ax.set_xlim(x[0], x[-1])
            ax.set_ylim(0, 1)
            canvas = FigureCanvasAgg(fig)
            canvas.draw()
            images.append(np.asarray(canvas.buffer_rgba()).astype(int))
    differ = np.abs(images[0] - images[1]).max(axis=2) > 0
    assert differ.mean() < 0.005


def test_cdf_and_overlay_share_their_bands_and_say_what_the_line_keeps() -> None:
    values = _samples()[:2]
    parts = cdf_parts(["a", "b"], values, 95.0)
    one, both = cdf(parts, 95.0, "time", "s"), cdf(parts, 95.0, "time", "s", overlay=True)
    band = [r for r in one.rows if r[1] == "band"]
    assert band == [r for r in both.rows if r[1] == "band"]
    whole = cdf_band(values[1], np.arange(2.0, 99.0, parts[1].step), confidence=95.0)
    mine = [r for r in band if r[0] == "b"]
    assert [r[4] for r in mine] == whole.lower.tolist()
    assert [r[5] for r in mine] == whole.upper.tolist()
    assert f"within each 1/{STEP_COLUMNS:,} of its x range" in one.caption
    assert "step line" not in both.caption  # the overlay draws no step line
    assert not any(r[1] == "trial" for r in both.rows)


def test_a_report_builds_the_cdf_parts_once_for_both_figures(tmp_path, monkeypatch) -> None:
    from benchlang.app.report import report_inputs
    from benchlang.report.figures import kind_of
    from benchlang.stats import figure_cdf
    from tests.figure_stores import make_store, quickstart

    store, _ = make_store(tmp_path, "quick", ROOT / "specs" / "quickstart.bench", quickstart)
    calls = []
    real = figure_cdf.cdf_parts

    def counted(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(figure_cdf, "cdf_parts", counted)
    inputs = report_inputs(store, with_headline=False)
    one = kind_of("cdf").build(inputs, None)
    both = kind_of("cdf-overlay").build(inputs, None)
    assert len(calls) == 1
    assert [r for r in one.rows if r[1] == "band"] == [r for r in both.rows if r[1] == "band"]
    assert len(calls[0]) == 3  # quickstart's three tools
    assert "kpis" not in vars(inputs)  # a CDF draws no KPI: the analyses are not computed
    kind_of("cdf").build(report_inputs(store, with_headline=False), None)
    assert len(calls) == 2  # another report (other inputs) builds its own
    with_kpis = report_inputs(store, with_headline=False)
    assert len(with_kpis.kpis) == 3  # the configurations the analysis holds are the CDF's
    assert kind_of("cdf").build(with_kpis, None).rows == one.rows
