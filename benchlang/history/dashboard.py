"""The history's dashboard: one self-contained HTML page (no network), a plot per series over
commits with each point's interval, its change points marked with their size, the commits on
hover and in a table, regressions first. Drawn with the run report's SVG writer and page
(report.html), so both pages look and read alike."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from benchlang.history.acks import Ack, acknowledged
from benchlang.history.text import possible_line
from benchlang.history.verdicts import Change, SeriesChanges
from benchlang.report.html.page import document, esc, figure, section, table, warning
from benchlang.report.html.svg import MUTED, Chart, Frame, dots, path, text

POINT, INTERVAL, WORSE, BETTER = "#0b62c4", "#0b62c4", "#c62828", "#2e7d32"


def _short(commit: str | None) -> str:
    return commit[:10] if commit else "-"


def _size(c: Change) -> str:
    """A level change in percent, a noise change as the ratio of standard errors."""
    if c.kind == "spread":
        return f"spread {c.ratio:.2g}x"
    return f"{(c.ratio - 1) * 100:+.1f}%"


def _interval(c: Change) -> str:
    if c.kind == "spread":
        return f"[{c.ratio_low:.2g}x, {c.ratio_high:.2g}x]"
    return f"[{(c.ratio_low - 1) * 100:+.1f}%, {(c.ratio_high - 1) * 100:+.1f}%]"


def _plot(found: SeriesChanges) -> str:
    s = found.series
    x = np.arange(len(s), dtype=float)
    chart = Chart(width=900, height=320)
    lo, hi = s.lower, s.upper
    bars = np.isfinite(lo) & np.isfinite(hi)

    def intervals(f: Frame) -> str:
        xs, ys0, ys1 = f.x(x[bars]), f.y(lo[bars]), f.y(hi[bars])
        d = "".join(f"M{a:.1f} {b:.1f}V{c:.1f}" for a, b, c in zip(xs, ys0, ys1, strict=True))
        return path(d, INTERVAL, stroke_opacity=0.45, stroke_width=1.5)

    def points(f: Frame) -> str:
        marks = [path(dots(f.x(x), f.y(s.values), 2.6), fill=POINT)]
        for i in range(len(s)):  # hover: the commit and the value
            if math.isfinite(s.values[i]):
                tip = f"{_short(s.commits[i])} {s.dates[i]}: {s.values[i]:.4g}"
                marks.append(
                    f"<circle cx='{float(f.x(x[i])):.1f}' cy='{float(f.y(s.values[i])):.1f}' "
                    f"r='6' fill='transparent'><title>{esc(tip)}</title></circle>"
                )
        return "".join(marks)

    chart.add(intervals, x[bars], np.concatenate([lo[bars], hi[bars]]) if bars.any() else ())
    chart.add(points, x, s.values)
    chart.key("KPI", "dot", POINT)
    chart.key("interval", "line", INTERVAL)
    for c in found.changes + found.spread:
        colour = {"regression": WORSE, "improvement": BETTER}.get(c.kind, MUTED)
        label = _size(c)

        def marker(f: Frame, c: Change = c, colour: str = colour, label: str = label) -> str:
            at = float(f.x(c.index - 0.5))
            return path(
                f"M{at:.1f} {f.top:.1f}V{f.bottom:.1f}", colour, stroke_dasharray="5 3"
            ) + text(at + 4, f.top + 12, label, 11, fill=colour, font_weight="600")

        chart.add(marker)
        chart.key(f"{c.kind}", "line", colour, "5 3")
    unit = f" ({s.unit})" if s.unit else ""
    return chart.render(
        f"{s.name}: p{s.percentile:g} per commit",
        "commit (oldest first)",
        f"{s.metric}{unit}",
        note=f"{s.better} is better",
    )


def _series_section(found: SeriesChanges, index: int) -> str:
    s = found.series
    rows = [
        [
            i,
            _short(s.commits[i]),
            s.dates[i],
            float(s.values[i]),
            float(s.lower[i]),
            float(s.upper[i]),
            s.trials[i],
            s.independence[i],
        ]
        for i in range(len(s))
    ]
    alt = f"{s.name}: {len(s)} points, " + (
        f"{len(found.changes)} change point(s)" if found.changes else "no change point"
    )
    body = [
        figure(
            _plot(found),
            alt,
            ["#", "commit", "date", "value", "lower", "upper", "trials", "independence"],
            rows,
            note=f"change points: {found.method}",
        )
    ]
    if found.note:
        body.insert(0, warning(found.note))
    if found.possible is not None:
        body.insert(0, warning(possible_line(s.name, found.possible), "note"))
    failed = sum(v == "failed" for v in s.independence)
    if failed:
        body.insert(
            0,
            warning(
                f"{failed} of {len(s)} runs failed their run-level independence check: their "
                "points are descriptive only (at the check's 5% level, about 1 run in 20 fails "
                "by chance on independent trials)."
            ),
        )
    return section(f"series-{index}", s.name, body)


def _change_rows(found: Sequence[SeriesChanges], acks: Sequence[Ack]) -> list[list[object]]:
    rows = []
    for f in found:
        for c in f.changes + f.spread:
            ack = acknowledged(f.series, c, acks) if c.kind == "regression" else None
            rows.append(
                [
                    c.kind + (f" (acknowledged: {ack.reason})" if ack else ""),
                    f.series.name,
                    f"{_short(c.commit_before)}..{_short(c.commit_after)}",
                    _size(c),
                    _interval(c),
                    c.p_value,
                ]
            )
    return sorted(rows, key=lambda r: not str(r[0]).startswith("regression"))


def dashboard(found: Sequence[SeriesChanges], name: str, acks: Sequence[Ack] = ()) -> str:
    """The page: the change points (regressions first), then one plot per series with the
    series that regressed first."""
    ordered = sorted(found, key=lambda f: (not f.regressions, f.series.name))
    rows = _change_rows(ordered, acks)
    summary = (
        table(["kind", "series", "commits", "change", "interval", "p-value"], rows)
        if rows
        else f"<p style='color:{MUTED}'>No change point in any series.</p>"
    )
    regressed = sum(bool(f.regressions) for f in ordered)
    sections = [
        (
            "changes",
            "Change points",
            section(
                "changes",
                "Change points",
                [
                    f"<p>{len(ordered)} series, {regressed} with a regression. A change lies "
                    "between the two commits shown; its size is the ratio of the segment "
                    "levels after/before, with its interval; a spread change is one of the "
                    "points' noise (the ratio of their standard errors after/before), the "
                    "level unchanged.</p>",
                    summary,
                    *(
                        warning(possible_line(f.series.name, f.possible), "note")
                        for f in ordered
                        if f.possible
                    ),
                    *(
                        [
                            f"<p>{len(acks)} regression(s) acknowledged "
                            "(<code>benchlang history ack</code>):</p>",
                            table(
                                ["id", "series", "commits", "date", "reason"],
                                [
                                    [
                                        a.change_id,
                                        f"{a.metric} {a.configuration}",
                                        f"{_short(a.commit_before)}..{_short(a.commit_after)}",
                                        a.date,
                                        a.reason,
                                    ]
                                    for a in acks
                                ],
                            ),
                        ]
                        if acks
                        else []
                    ),
                ],
            ),
        )
    ]
    for i, f in enumerate(ordered):
        sections.append((f"series-{i}", f.series.name, _series_section(f, i)))
    return document("Performance history", f"benchlang history of {name}", sections)
