"""OrderSage's figures (docs/figures.md) in one-column paper style (3.3 in wide) and the report's
style, laid out by matplotlib as ``benchlang figure`` draws them: no drawn text (axis labels,
tick labels, value labels, case labels, legend) outside the figure, none over another. Stores of
seeded synthetic values for real plans: specs/order-trap.bench (long configuration names) and
a 14-configuration store with one ordering trap (tests/test_figures.py)."""

from __future__ import annotations

from itertools import combinations

import pytest

from benchlang.report.figures import labels, registry
from benchlang.report.figures.render import BASE_RC, STYLES, Palette
from tests.figure_stores import SPECS, make_store
from tests.test_figures import MANY, many_value
from tests.test_figures_docs import order_trap


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from benchlang.app.report import report_inputs

    root = tmp_path_factory.mktemp("order-paper")
    return {
        "trap": report_inputs(
            make_store(root, "trap", SPECS / "order-trap.bench", order_trap)[0],
            with_headline=False,
        ),
        "many": report_inputs(make_store(root, "many", MANY, many_value)[0], with_headline=False),
    }


def _shown(ax, axis: str) -> list:
    """The tick labels drawn: visible, not empty, inside the axis's view."""
    low, high = sorted(ax.get_xlim() if axis == "x" else ax.get_ylim())
    ticks = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    at = 0 if axis == "x" else 1
    return [
        t for t in ticks if t.get_visible() and t.get_text() and low <= t.get_position()[at] <= high
    ]


def _texts(fig, rotated_ticks: bool) -> list:
    out = []
    for ax in fig.axes:
        out += [ax.xaxis.label, ax.yaxis.label, *ax.texts, *_shown(ax, "y")]
        if not rotated_ticks:
            out += _shown(ax, "x")
    for legend in fig.legends:
        out += legend.get_texts()
    return [t for t in out if t.get_visible() and t.get_text()]


def _laid_out(inputs, name: str, style: str):
    import matplotlib as mpl
    from matplotlib.figure import Figure

    kind = registry()[name]
    data = kind.build(inputs, None)
    with mpl.rc_context({**BASE_RC, **STYLES[style]}):
        fig = Figure(layout="constrained")
        kind.draw(fig, data, Palette(labels(inputs)), style == "paper")
        fig.draw_without_rendering()
    return fig


@pytest.mark.parametrize("store", ["trap", "many"])
@pytest.mark.parametrize("style", ["paper", "report"])
@pytest.mark.parametrize("name", ["order-pvalues", "order-delta", "order-cases", "order-ci"])
def test_no_text_is_cut_or_over_another(inputs, store, style, name):
    fig = _laid_out(inputs[store], name, style)
    page = fig.bbox
    texts = _texts(fig, rotated_ticks=name == "order-ci")
    assert len(texts) >= 4
    for t in texts:
        box = t.get_window_extent()
        assert (
            box.x0 >= page.x0 - 1
            and box.x1 <= page.x1 + 1
            and box.y0 >= page.y0 - 1
            and box.y1 <= page.y1 + 1
        ), f"{name} ({style}): {t.get_text()!r} is cut at the figure's edge"
    for a, b in combinations(texts, 2):
        one, two = a.get_window_extent(), b.get_window_extent()
        wide = min(one.x1, two.x1) - max(one.x0, two.x0)
        high = min(one.y1, two.y1) - max(one.y0, two.y0)
        assert wide <= 1 or high <= 1, (
            f"{name} ({style}): {a.get_text()!r} overlaps {b.get_text()!r}"
        )
