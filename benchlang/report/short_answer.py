"""The short answer a run ends with: what ran and failed, the ranking in words a person reads,
what was checked and whether it held, and where the rest is (hyperfine ends in about ten lines;
so does this, per ranked metric).

One central number per configuration: the statistic the ranking compares (the KPI's
percentile of the trials, ``stats.headline``), in one unit per table. The intervals are the
ranking's own, which hold jointly over its comparisons (``stats.simultaneous``); when a ranking
has none, one line says why in plain words and what to change. The full headline (series KPIs,
bounds, variability, the confidences) is ``benchlang analyze``'s and ``run -v``'s
(``report.headline``); the record is ``benchlang record``'s.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np

from benchlang.report.data import ExperimentData
from benchlang.report.headline import MetricHeadline, RankingGroup, ratio_parts
from benchlang.report.table import format_quantity, scale_for

WIDTH = 100


def _wrap(text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(
        text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False
    )


def _scale(h: MetricHeadline) -> tuple[str | None, float]:
    if h.display is not None:
        return h.display
    stats = [s for g in h.groups for s in g.ranking.statistics if math.isfinite(s)]
    return scale_for(float(np.median(stats)) if stats else None, h.unit)


def _side_metrics(data: ExperimentData, ranked: set[str]) -> dict[str, dict[str, float]]:
    """Per configuration label, the median of each metric without a KPI (user and system
    time beside wall time), for the ranking's lines."""
    out: dict[str, dict[str, float]] = {}
    table = data.table
    for name, mv in data.metrics.items():
        if name in ranked:
            continue
        ok = table.ok & np.isfinite(mv.values)
        for index, label, _, _ in data.configurations():
            mine = mv.values[ok & (table.configuration == index)]
            if mine.size:
                out.setdefault(label, {})[name] = float(np.median(mine))
    return out


def _side_text(
    values: dict[str, float],
    units: dict[str, str | None],
    scale: tuple[str | None, float, str | None],
) -> str:
    """ "(user 0.61 ms, system 0.02 ms)": each in the ranked metric's display unit when it has
    the same unit (``scale``: display unit, factor, metric unit), else in its own."""
    parts = []
    for name, value in values.items():
        same = units.get(name) == scale[2]
        unit, factor = scale[:2] if same else scale_for(value, units.get(name))
        text = format_quantity(value, None, scale=(None, factor))
        parts.append(f"{name} {text}{f' {unit}' if unit else ''}")
    return f"({', '.join(parts)})" if parts else ""


def ratio_words(h: MetricHeadline, best: str, comparison) -> str:
    """A configuration against the best, from its own side: "1.16× slower than b2sum [1.10,
    1.22]", or "no clear difference from b2sum: 1.02× [0.97, 1.08]" when the interval holds 1."""
    r, interval, unclear, (_, word) = ratio_parts(h, comparison)
    if unclear:
        return f"no clear difference from {best}: {r}{interval}"
    return f"{r} {word} {best}{interval}"


def _group_lines(
    h: MetricHeadline,
    g: RankingGroup,
    side: dict[str, dict[str, float]],
    units: dict[str, str | None],
) -> list[str]:
    rk = g.ranking
    unit, factor = _scale(h)
    stat = "median" if h.kpi_percentile == 50 else f"p{h.kpi_percentile:g}"
    scope = f" by {g.factor}" if g.factor is not None else ""
    held = ", ".join(f"{k}={v}" for k, v in g.held if k != "benchmark")
    scope += f" ({held})" if held else ""
    if rk.descriptive_only:
        how = "no interval (below)"
    else:
        n = rk.family.comparisons or len(rk.comparisons)
        how = f"intervals hold jointly at {rk.confidence:g}% over {n} comparison" + "s" * (n != 1)
    lines = [
        f"{h.metric}{scope}: {stat}{f' ({unit})' if unit else ''}, {h.better} is better; {how}"
    ]
    width = max(len(name) for name in g.names)
    number = max(len(format_quantity(s, None, scale=(None, factor))) for s in rk.statistics)
    for place, j in enumerate(rk.order):
        value = format_quantity(rk.statistics[j], None, scale=(None, factor))
        comparison = next((c for c in rk.comparisons if c.worse == j), None)
        if place == 0:
            words = "best" if len(rk.order) > 1 else ""
        elif comparison is None:
            words = "no value"
        else:
            words = ratio_words(h, g.names[comparison.better], comparison)
        extra = _side_text(side.get(g.labels[j], {}), units, (unit, factor, h.unit))
        lines.append(f"  {g.names[j]:<{width}}  {value:>{number}}  {words} {extra}".rstrip())
    if rk.descriptive_only:
        lines += _wrap(f"No interval: {_plain('; '.join(rk.reasons))}.")
    return lines


def _plain(text: str) -> str:
    """A sentence of the full headline, without its pointers to what only it shows above."""
    return text.replace(" (run-level verdict above)", "").replace(" (above)", "")


def _basis_lines(groups) -> list[str]:
    """What was checked and what the intervals assume, once for the groups that share it."""
    lines: list[str] = []
    for text in dict.fromkeys(
        f"Checked: {g.check}" for g in groups if g.check and not g.ranking.descriptive_only
    ):
        lines += _wrap(_plain(text) + ".")
    for text in dict.fromkeys(
        g.assumption for g in groups if g.assumption and not g.ranking.descriptive_only
    ):
        lines += _wrap(f"{text[0].upper()}{text[1:]}.")
    return lines


def answer_lines(data: ExperimentData, headlines: list[MetricHeadline]) -> list[str]:
    """The ranking of every KPI metric in a few lines each (nothing when none is ranked)."""
    ranked = {h.metric for h in headlines}
    side = _side_metrics(data, ranked)
    units = {name: mv.metric.unit for name, mv in data.metrics.items()}
    lines: list[str] = []
    for h in headlines:
        for g in h.groups:
            lines += _group_lines(h, g, side, units)
        lines += _basis_lines(h.groups)
        if not h.groups:
            for c in h.configurations:
                unit, factor = _scale(h)
                value = format_quantity(c.kpi, None, scale=(None, factor))
                lines.append(f"{h.metric}: {c.label} {value}{f' {unit}' if unit else ''} (KPI)")
    return lines


def more_lines(store: str) -> list[str]:
    """Where the rest of the answer is, wrapped at ``WIDTH``."""
    return _wrap(
        f"More: benchlang analyze {store} (series KPIs, tests) · benchlang record {store} · "
        f"benchlang report {store} -o report.html",
        indent="",
    )
