"""``compare SPEC --base REF`` for people: the terminal table and the Markdown summary for a
pull request (GitHub's step summary or a comment body; GitLab's job page)."""

from __future__ import annotations

import math
import textwrap


def _pct(x: float) -> str:
    return f"{100.0 * (x - 1.0):+.1f}%" if math.isfinite(x) else "n/a"


def _interval(ratio) -> str:
    if not math.isfinite(ratio[1]):
        return "not measured"
    return f"[{_pct(ratio[1])}, {_pct(ratio[2])}]"


def _rev(rev: dict) -> str:
    return f"{rev['ref']} {rev['commit'][:12]} ({rev['subject']})"


def _method(result) -> str:
    m = result.method
    return (
        f"{m['design']}. Per row head/base with its {m['row_confidence']:.3g}% interval "
        f"(Bonferroni over {m['rows']} rows: a false `worse` in at most "
        f"{100 * m['false_worse_per_compare']:.3g}% of compares); margin "
        f"{100 * m['margin']:.3g}%: worse/better beyond it, equivalent inside it (TOST)."
    )


def _tally(result) -> str:
    return ", ".join(f"{n} {v}" for v, n in result.counts().items())


def _two_stages(result) -> bool:
    sizing = result.method.get("sizing")
    return bool(sizing) and sizing["rounds"] > sizing["pilot"]


def render(result) -> str:
    """The terminal form: one line per (configuration, metric), then the tally."""
    lines = [
        f"head {_rev(result.head)}",
        f"base {_rev(result.base)}",
        ("two sessions (Stein's pilot, then the rest)" if _two_stages(result) else "one session")
        + ": in every round each configuration at both revisions, one after the other, "
        "in random order",
        "",
    ]
    width = max([len(r.configuration) for r in result.rows] + [13])
    lines.append(
        f"{'configuration':{width}}  {'metric':10}  {'head/base':>9}  "
        f"{'interval':22}  {'rounds':>6}  verdict"
    )
    for r in result.rows:
        lines.append(
            f"{r.configuration:{width}}  {r.metric:10}  {_pct(r.ratio[0]):>9}  "
            f"{_interval(r.ratio):22}  {r.rounds:>6}  {r.verdict}"
        )
    lines += ["", _tally(result), textwrap.fill(_method(result).replace("`", ""), 100)]
    lines += [f"note: {n}" for n in result.notes]
    if len(result.stores) > 1:
        lines.append(f"the stores (pilot, second stage): {', '.join(result.stores)}")
    elif result.store:
        lines.append(f"the session's store: {result.store}")
    return "\n".join(lines)


def markdown(result) -> str:
    """The Markdown summary: a headline, the table (worse rows first), the method."""
    worse = len(result.worse)
    icon = "regression" if worse else "no regression"
    rows = sorted(result.rows, key=lambda r: r.verdict != "worse")
    lines = [
        f"### benchlang compare: {icon} ({_tally(result)})",
        "",
        f"**head** `{result.head['commit'][:12]}` {result.head['subject']} vs "
        f"**base** `{result.base['commit'][:12]}` {result.base['subject']}",
        "",
        f"| configuration | metric | head/base | {result.method['row_confidence']:.3g}% interval "
        "| rounds | verdict |",
        "|---|---|---:|---|---:|---|",
    ]
    for r in rows:
        verdict = f"**{r.verdict}**" if r.verdict == "worse" else r.verdict
        lines.append(
            f"| {r.configuration} | {r.metric} | {_pct(r.ratio[0])} | {_interval(r.ratio)} "
            f"| {r.rounds} | {verdict} |"
        )
    lines += ["", _method(result)]
    lines += [f"\nNote: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"
