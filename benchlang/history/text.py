"""The history's answers as text for a terminal, Markdown for a CI job page (GitHub's
``$GITHUB_STEP_SUMMARY`` and GitLab's job summaries read Markdown) and strict JSON."""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from benchlang.history.acks import Ack
from benchlang.history.verdicts import Possible, SeriesChanges, change_id
from benchlang.jsonout import document, dumps
from benchlang.report.table import render_table

if TYPE_CHECKING:
    from benchlang.history.gate import Regression, SeriesCheck


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = io.StringIO()
    render_table(headers, rows, stream=out, plain=True)
    return out.getvalue().rstrip("\n")


def _pct(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%" if math.isfinite(ratio) else "-"


def _short(commit: str | None) -> str:
    return commit[:10] if commit else "-"


def list_text(listing: dict[str, Any]) -> str:
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
    acks = listing.get("acknowledged", [])
    if acks:
        lines.append(f"{len(acks)} acknowledged regression(s):")
        for a in acks:
            lines.append(
                f"  {a['change_id']} {a['metric']} {a['configuration']} at "
                f"{_short(a['commit_before'])}..{_short(a['commit_after'])} ({a['date']}): "
                f"{a['reason']}"
            )
    return "\n".join(lines) + "\n"


def _times(ratio: float) -> str:
    return f"{ratio:.2g}x" if math.isfinite(ratio) else "-"


def possible_line(name: str, p: Possible) -> str:
    """A possible change in the last runs, with its kind and first commit: "time size=1: a
    possible change in the last 2 runs (x1.153), 1 more to confirm (a regression from
    1a2b3c4d5e on)"."""
    article = "an" if p.kind[0] in "aeiou" else "a"
    return f"{name}: {p.message} ({article} {p.kind} from {_short(p.commit)} on)"


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
            cid = change_id(f.series, c) if c.kind == "regression" else ""
            rows.append([f.series.name, commits, size, interval, f"{c.p_value:.2g}", kind, cid])
    total = sum(len(f.changes) for f in found)
    noise = sum(len(f.spread) for f in found)
    head = f"{total} change point(s) in {len(found)} series"
    head += f", {noise} change(s) of noise (spread)" if noise else ""
    possible = [possible_line(f.series.name, f.possible) for f in found if f.possible]
    head += f", {len(possible)} possible in the last runs" if possible else ""
    notes = "".join(f"{line}\n" for line in possible)
    notes += "".join(f"{f.series.name}: {f.note}\n" for f in found if f.note)
    if not rows:
        return head + "\n" + notes
    table = _table(["series", "commits", "change", "interval", "p", "kind", "id"], rows)
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
            "-" if not math.isfinite(c.lower) else f"[{_pct(c.lower)}, {_pct(c.upper)}]",
            c.verdict + (" (descriptive only)" if c.descriptive_only else ""),
        ]
        for c in checks
    ]


def _level(checks: Sequence[SeriesCheck], alpha: float) -> str:
    """The prediction intervals' level: Bonferroni over the family's k series."""
    k = max(1, len(checks))
    return f"{100 * (1 - 2 * alpha / k):.4g}% prediction interval"


def _regression_line(r: Regression) -> str:
    c = r.change
    where = f"{_short(c.commit_before)}..{_short(c.commit_after)}"
    text = (
        f"{r.state.upper() if r.state == 'open' else r.state} regression {r.id} "
        f"{r.series.name} at {where}: {_pct(c.ratio)} [{_pct(c.ratio_low)}, {_pct(c.ratio_high)}]"
        f", the level now {_pct(r.now)} against before it"
    )
    if r.state == "open":
        if r.needs is not None:
            text += f"; about {r.needs} more run(s) at this level would decide it back"
        text += f"; acknowledge: benchlang history ack {r.id} --reason TEXT"
    elif r.state == "closed":
        text += f"; decided back within the margin at {_short(r.closed_at)}"
    elif r.ack is not None:
        text += f" ({r.ack.date}: {r.ack.reason})"
    return text


def _regressions(checks: Sequence[SeriesCheck]) -> list[Regression]:
    return [r for c in checks for r in c.regressions if r.state != "closed"]


def _check_head(checks: Sequence[SeriesCheck], margin: float) -> str:
    worse = sum(c.verdict == "worse" for c in checks)
    still = sum(len(c.open) for c in checks)
    parts = []
    if worse:
        parts.append(
            f"{worse} of {len(checks)} newest runs worse beyond the {margin * 100:g}% margin"
        )
    if still:
        parts.append(f"{still} regression(s) still open")
    if parts:
        return "REGRESSION: " + "; ".join(parts)
    return f"no regression beyond the {margin * 100:g}% margin in {len(checks)} series"


def check_text(checks: Sequence[SeriesCheck], margin: float, alpha: float = 0.05) -> str:
    header = ["series", "commit", "vs baseline", _level(checks, alpha), "verdict"]
    body = _table(header, _check_rows(checks))
    notes = [f"{c.series.name}: {c.reason}" for c in checks]
    notes += [_regression_line(r) for r in _regressions(checks)]
    notes += _possible_lines(checks)
    return "\n".join([_check_head(checks, margin), body, *notes]) + "\n"


def _possible_lines(checks: Sequence[SeriesCheck]) -> list[str]:
    """Each possible change in the last runs: named, not a failure on its own (history.gate)."""
    return [
        possible_line(c.series.name, c.possible)
        + f"; not a failure on its own until the next {c.possible.to_confirm} run(s) decide it"
        for c in checks
        if c.possible is not None
    ]


def check_markdown(checks: Sequence[SeriesCheck], margin: float, alpha: float = 0.05) -> str:
    """The summary a CI job page shows."""
    icon = ":x:" if any(c.fails for c in checks) else ":white_check_mark:"
    lines = [
        f"### {icon} benchlang history check",
        "",
        _check_head(checks, margin) + ".",
        "",
        f"| series | commit | vs baseline | {_level(checks, alpha)} | verdict |",
        "| --- | --- | --- | --- | --- |",
    ]
    for row in _check_rows(checks):
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    lines += [""] + [f"- {_regression_line(r)}" for r in _regressions(checks)]
    lines += [f"- {line}" for line in _possible_lines(checks)]
    lines += [
        "",
        "Each newest run is judged against its series' runs since the last change point by a "
        "prediction interval for a run's level (Hahn & Meeker 1991, §4), the series as one "
        "family (Holm 1979); a regression stays open until decided fixed or acknowledged "
        "(docs/history.md).",
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
                "regression": any(c.fails for c in checks),
                "series": [c.to_dict() for c in checks],
            },
        )
    )


def ack_text(acks: Sequence[Ack]) -> str:
    return "".join(
        f"acknowledged {a.change_id} {a.metric} {a.configuration} at "
        f"{_short(a.commit_before)}..{_short(a.commit_after)}: {a.reason}\n"
        for a in acks
    )
