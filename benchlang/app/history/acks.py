"""``history ack``: acknowledge a regression change point so that the gate stops failing on
it (history.acks, docs/history.md "The gate for CI")."""

from __future__ import annotations

import datetime as dt

from benchlang.app.history.runs import all_changes, history_target, open_history
from benchlang.errors import UserError
from benchlang.history.acks import NEAR, Ack, change_id, write_acks
from benchlang.history.series import Series
from benchlang.history.verdicts import Change


def history_ack(
    change: str,
    reason: str,
    history: str | None = None,
    *,
    alpha: float = 0.05,
    confidence: float = 95.0,
) -> list[Ack]:
    """Acknowledge a regression (history.acks): ``change`` is a change point's id (as ``check``
    and ``changes`` show it), its commit range ``BEFORE..AFTER`` (commit prefixes) or the
    commit after it; every regression it names, in every series, up to ``acks.NEAR`` points
    from where it is now."""
    if not reason.strip():
        raise UserError("--reason is empty", "say why the regression is accepted")
    with open_history(history_target(history)) as h:
        found = all_changes(h, alpha, confidence)
        matched = []
        for f in found:
            s = f.series
            for c in f.regressions:
                if _names(change, s, c, NEAR):
                    matched.append(
                        Ack(change_id(s, c), *s.key, c.commit_before, c.commit_after, c.index,
                            reason.strip(), dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
                    )  # fmt: skip
        if not matched:
            known = ", ".join(
                f"{change_id(f.series, c)} ({f.series.name})" for f in found for c in f.regressions
            )
            raise UserError(
                f"no regression change point {change!r} in the history",
                f"regressions: {known}" if known else "the history has no regression",
            )
        write_acks(h, matched)
    return matched


def _names(ref: str, series: Series, c: Change, near: int) -> bool:
    """Whether ``ref`` (an id, a commit range or a commit) names change ``c`` of ``series``."""
    ref = ref.strip()
    if ref == change_id(series, c):
        return True
    before, sep, after = ref.partition("..")
    target = after if sep else ref
    if len(target) < 4:
        return False
    if sep and before and not (c.commit_before or "").startswith(before):
        at = [i for i, x in enumerate(series.commits) if x and x.startswith(before)]
        if not any(abs(i + 1 - c.index) <= near for i in at):
            return False
    at = [i for i, x in enumerate(series.commits) if x and x.startswith(target)]
    return any(abs(i - c.index) <= near for i in at)
