"""``benchlang diff`` as text, Markdown (for a pull request) and JSON; every view says which
spread its intervals carry (between sessions, or within session only)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from benchlang.jsonout import dumps
from benchlang.report.diff import ConfigurationDiff, MetricDiff, StoreDiff
from benchlang.report.table import format_quantity, scale_for
from benchlang.stats.sessions import BETWEEN, MIN_SESSIONS, WITHIN, SessionInterval


def _statistic(p: float) -> str:
    return "median" if p == 50 else f"p{p:g}"


def _change(ratio: float) -> str:
    return f"{(ratio - 1) * 100:+.1f}%" if math.isfinite(ratio) else "-"


def _interval(row: ConfigurationDiff) -> str:
    r = row.interval
    if r.descriptive_only:
        return "descriptive only"
    return f"[{r.lower:.4g}, {r.upper:.4g}]"


def _verdict(row: ConfigurationDiff) -> str:
    said = row.gate.verdict if row.gate is not None else None
    if row.spread == BETWEEN:
        if said is not None:
            return said
        r = row.interval
        if r.descriptive_only:
            return "-"
        return "changed" if r.lower > 1 or r.upper < 1 else "no clear change"
    shown = row.within_verdict not in (None, "-", said)
    within = f"within session: {row.within_verdict}" if shown else ""
    if said is None:
        return f"- ({within})" if within else "-"
    return f"{said} ({within})" if within else said


def table_rows(d: StoreDiff, m: MetricDiff) -> tuple[list[str], list[list[str]]]:
    """Header and rows of one metric's table (shared by text and Markdown)."""
    scale = m.scale or scale_for(
        next(
            (r.interval.statistic_a for r in m.rows if math.isfinite(r.interval.statistic_a)), None
        ),
        m.unit,
    )
    stat = _statistic(m.percentile)
    if d.spread != WITHIN and max(d.sessions) > 1:
        stat = f"{stat} (geo. mean of sessions)"
    verdict = f"verdict (margin {d.margin * 100:g}%)" if d.margin is not None else "verdict"
    level = d.family.get("row_confidence", d.confidence)
    header = [
        "configuration",
        f"A {stat}",
        f"B {stat}",
        "B/A",
        "change",
        f"{level:.4g}% interval",
        verdict,
    ]
    rows = [
        [
            r.label,
            format_quantity(r.interval.statistic_a, m.unit, scale=scale),
            format_quantity(r.interval.statistic_b, m.unit, scale=scale),
            f"{r.interval.ratio:.4g}" if math.isfinite(r.interval.ratio) else "-",
            _change(r.interval.ratio),
            _interval(r),
            _verdict(r),
        ]
        for r in m.rows
    ]
    return header, rows


def _side(names: tuple[str, ...], experiment: str, plan: str) -> str:
    stores = names[0] if len(names) == 1 else f"{len(names)} sessions ({', '.join(names)})"
    return f"{stores} ({experiment}, plan {plan[:19]})"


def _spread(d: StoreDiff) -> str:
    f = d.family
    family = (
        f"{f.get('confidence', 0):g}% simultaneous over {f['rows']} rows (Bonferroni-t, "
        f"{f.get('row_confidence', 0):.4g}% each)"
    )
    if d.spread == BETWEEN and min(d.sessions) >= MIN_SESSIONS:
        return (
            f"spread: between sessions ({d.sessions[0]} and {d.sessions[1]} sessions; each "
            f"session's KPI one cluster, Welch t on log KPIs, Donald & Lang 2007); {family}"
        )
    if d.spread in (BETWEEN, "mixed"):
        source = next(
            r.interval.method
            for m in d.metrics
            for r in m.rows
            if r.spread == BETWEEN and isinstance(r.interval, SessionInterval)
        ).split(" (semivariogram at")[0]
        where = "" if d.spread == BETWEEN else ", within session only for the rows it lacks"
        return f"spread: between sessions, borrowed from {source}{where}; {family}"
    return (
        "spread: within session only ("
        + ("one session per side" if d.sessions == (1, 1) else "sessions pooled")
        + f"); {d.confidence:g}% stratified cluster-bootstrap interval"
    )


def _intro(d: StoreDiff) -> list[str]:
    gate = (
        f"; margin {d.margin * 100:g}%: worse = the whole interval above {1 + d.margin:.4g}, "
        f"equivalent = inside [{1 / (1 + d.margin):.4g}, {1 + d.margin:.4g}] (TOST, Schuirmann 1987)"
        if d.margin is not None
        else ""
    )
    return [
        f"diff: A = {_side(d.stores[0], d.experiments[0], d.plans[0])}, "
        f"B = {_side(d.stores[1], d.experiments[1], d.plans[1])}",
        f"B/A of each configuration's statistic; {_spread(d)}{gate}",
    ]


def _tail(d: StoreDiff) -> list[str]:
    lines = []
    for m in d.metrics:
        for r in m.rows:
            if r.interval.reasons and not (r.spread == BETWEEN and d.undecided):
                lines.append(f"{m.metric} {r.label}: " + "; ".join(r.interval.reasons))
    for side, only in zip("AB", d.only, strict=True):
        if only:
            lines.append(f"only in {side}: {', '.join(only)}")
    if d.left_out:
        lines.append(f"left out (not in every store): {', '.join(d.left_out)}")
    lines += [f"warning: {w}" for w in d.warnings]
    for c in d.independence:
        if c.tested and not c.passed:
            lines.append(
                f"warning: session {c.side} {c.store} fails its run-level check: {c.summary}"
            )
        elif not c.tested:
            lines.append(f"note: session {c.side} {c.store}: {c.summary}")
    if d.undecided:
        lines.append(d.undecided)
    if d.margin is not None:
        worse = d.regressions
        lines.append(
            f"REGRESSION beyond {d.margin * 100:g}%: " + ", ".join(f"{m} {c}" for m, c in worse)
            if worse
            else f"no configuration is worse beyond {d.margin * 100:g}% with confidence"
        )
    return lines


def diff_text(d: StoreDiff) -> str:
    out = _intro(d)
    for m in d.metrics:
        header, rows = table_rows(d, m)
        out.append("")
        out.append(f"metric {m.metric}, {m.better} is better")
        widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]
        right = [0 < i < len(header) - 1 for i in range(len(header))]  # numbers to the right
        for row in (header, ["-" * w for w in widths], *rows):
            cells = zip(row, widths, right, strict=True)
            out.append(
                "  ".join(str(c).rjust(w) if r else str(c).ljust(w) for c, w, r in cells).rstrip()
            )
    tail = _tail(d)
    return "\n".join(out + ([""] if tail else []) + tail) + "\n"


def _md(text: str) -> str:
    return str(text).replace("|", r"\|")


def diff_markdown(d: StoreDiff) -> str:
    out = [f"**benchlang diff** {_md(' — '.join(_intro(d)))}", ""]
    for m in d.metrics:
        header, rows = table_rows(d, m)
        out.append(f"*{m.metric}*, {m.better} is better")
        out.append("")
        out.append("| " + " | ".join(_md(h) for h in header) + " |")
        out.append("| --- | " + " | ".join("---:" for _ in header[1:]) + " |")
        out += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
        out.append("")
    out += [f"- {_md(line)}" for line in _tail(d)]
    return "\n".join(out).rstrip() + "\n"


def diff_json(d: StoreDiff) -> str:
    return dumps(d.to_dict()) + "\n"


def render(d: StoreDiff, form: str) -> str:
    forms = {"text": diff_text, "markdown": diff_markdown, "json": diff_json}
    return forms[form](d)


__all__: Sequence[str] = ["render", "table_rows"]
