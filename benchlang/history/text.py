"""The history's answers as text for a terminal, Markdown for a CI job page (GitHub's
``$GITHUB_STEP_SUMMARY`` and GitLab's job summaries read Markdown) and strict JSON."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence

from benchlang.history.verdicts import SeriesChanges, SeriesCheck
from benchlang.jsonout import document, dumps
from benchlang.report.table import render_table


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = io.StringIO()
    render_table(headers, rows, stream=out, plain=True)
    return out.getvalue().rstrip("\n")


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%" if math.isfinite(ratio) else "-"


def _short(commit: str | None) -> str:
    return commit[:10] if commit else "-"


def list_text(listing: dict) -> str:
    runs, series = listing["runs"], listing["series"]
    lines = [f"history {listing['history']}: {len(runs)} run(s), {len(series)} series"]
    if series:
        rows = [
            [s["metric"], s["configuration"], s["host_class"], s["points"], s["first"], s["last"]]
            for s in series
        ]
        lines += _table(
            ["metric", "configuration", "host class", "points", "first", "last"], rows
        ).splitlines()
    return "\n".join(lines) + "\n"


def _times(ratio: float) -> str:
    return f"{ratio:.2g}x" if math.isfinite(ratio) else "-"


def changes_text(found: Sequence[SeriesChanges]) -> str:
    """Level changes (regression, improvement) and noise changes ("spread 2.1x": the points'
    standard errors after/before, noisier or quieter) in one table."""
    rows = []
    for f in found:
        for c in sorted(f.changes + f.spread, key=lambda c: c.index):
            commits = f"{_short(c.commit_before)}..{_short(c.commit_after)}"
            if c.kind == "spread":
                size = f"spread {_times(c.ratio)}"
                interval = f"[{_times(c.ratio_low)}, {_times(c.ratio_high)}]"
                kind = "noisier" if c.ratio > 1 else "quieter"
            else:
                size, interval = _pct(c.ratio), f"[{_pct(c.ratio_low)}, {_pct(c.ratio_high)}]"
                kind = c.kind
            rows.append([f.series.name, commits, size, interval, f"{c.p_value:.2g}", kind])
    total = sum(len(f.changes) for f in found)
    noise = sum(len(f.spread) for f in found)
    head = f"{total} change point(s) in {len(found)} series"
    head += f", {noise} change(s) of noise (spread)" if noise else ""
    notes = "".join(f"{f.series.name}: {f.note}\n" for f in found if f.note)
    if not rows:
        return head + "\n" + notes
    table = _table(["series", "commits", "change", "interval", "p", "kind"], rows)
    return head + "\n" + table + "\n" + notes


def changes_json(found: Sequence[SeriesChanges]) -> str:
    body = {"action": "changes", "series": [f.to_dict() for f in found]}
    return dumps(document("history", 1, body))


def _check_rows(checks: Sequence[SeriesCheck]) -> list[list[str]]:
    return [
        [
            c.series.name,
            _short(c.commit),
            _pct(c.ratio),
            "-" if c.gate is None else f"[{_pct(c.gate.lower)}, {_pct(c.gate.upper)}]",
            c.verdict + (" (descriptive only)" if c.descriptive_only else ""),
        ]
        for c in checks
    ]


def _level(checks: Sequence[SeriesCheck]) -> str:
    """The ratio interval's level: at least 1 - 2 alpha (two intervals, Bonferroni)."""
    alpha = next((c.gate.alpha for c in checks if c.gate is not None), 0.05)
    return f">={100 * (1 - 2 * alpha):g}% interval"


def _check_head(checks: Sequence[SeriesCheck], margin: float) -> str:
    worse = sum(c.verdict == "worse" for c in checks)
    if worse:
        return (
            f"REGRESSION: {worse} of {len(checks)} series worse beyond the {margin * 100:g}% margin"
        )
    return f"no regression beyond the {margin * 100:g}% margin in {len(checks)} series"


def check_text(checks: Sequence[SeriesCheck], margin: float) -> str:
    header = ["series", "commit", "vs baseline", _level(checks), "verdict"]
    body = _table(header, _check_rows(checks))
    notes = [f"{c.series.name}: {c.reason}" for c in checks]
    return "\n".join([_check_head(checks, margin), body, *notes]) + "\n"


def check_markdown(checks: Sequence[SeriesCheck], margin: float) -> str:
    """The summary a CI job page shows."""
    icon = ":x:" if any(c.verdict == "worse" for c in checks) else ":white_check_mark:"
    lines = [
        f"### {icon} benchlang history check",
        "",
        _check_head(checks, margin) + ".",
        "",
        f"| series | commit | vs baseline | {_level(checks)} | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in _check_rows(checks):
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    lines += [
        "",
        "Each newest point is judged against the median of its series since the last change "
        "point (TOST, Schuirmann 1987; docs/history.md).",
    ]
    return "\n".join(lines) + "\n"


def check_json(checks: Sequence[SeriesCheck], margin: float) -> str:
    return dumps(
        document(
            "history",
            1,
            {
                "action": "check",
                "margin": margin,
                "regression": any(c.verdict == "worse" for c in checks),
                "series": [c.to_dict() for c in checks],
            },
        )
    )
