"""Acknowledged regressions: a regression change point someone looked at and accepted
(``benchlang history ack ID --reason TEXT``), kept in the history's ``acks`` table (schema 2,
history.db) so that the gate stops failing on it and ``list`` and the dashboard show why.

A change point's location is re-estimated at every add (stats.changepoints), and may move by a
few commits: an acknowledgement is keyed by the series and the position of the change's first
commit after it, and matches a regression of that series up to ``NEAR`` points away (or by its
id when the commit is not in the series).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from benchlang.history.db import History
from benchlang.history.series import Series
from benchlang.history.verdicts import Change, change_id

__all__ = ["NEAR", "Ack", "acknowledged", "change_id", "read_acks", "write_acks"]

NEAR = 4
"""How many points a re-estimated change may move and still be the same change."""


@attrs.frozen
class Ack:
    change_id: str
    metric: str
    configuration: str
    host_class: str
    commit_before: str | None
    commit_after: str | None
    position: int
    reason: str
    date: str

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.metric, self.configuration, self.host_class)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def read_acks(h: History) -> list[Ack]:
    if not h.has_table("acks"):
        return []
    rows = h.query(
        "SELECT change_id, metric, configuration, host_class, commit_before, commit_after, "
        "position, reason, date FROM acks ORDER BY date, change_id"
    )
    return [
        Ack(cid, metric, conf, host, before, after, -1 if pos is None else int(pos), why, date)
        for cid, metric, conf, host, before, after, pos, why, date in rows
    ]


def write_acks(h: History, acks: Sequence[Ack]) -> None:
    """The acknowledgements in one transaction (one already there is replaced)."""
    with h.write():
        for a in acks:
            h.execute(
                "DELETE FROM acks WHERE change_id = ? AND metric = ? AND configuration = ? "
                "AND host_class = ?",
                (a.change_id, *a.key),
            )
            h.execute(
                "INSERT INTO acks (change_id, metric, configuration, host_class, commit_before, "
                "commit_after, position, reason, date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (a.change_id, *a.key, a.commit_before, a.commit_after, a.position, a.reason,
                 a.date),
            )  # fmt: skip


def _position(series: Series, ack: Ack) -> int:
    """Where the acknowledged change's first commit is in the series now (its stored
    position when the commit is not there)."""
    if ack.commit_after:
        for i, c in enumerate(series.commits):
            if c == ack.commit_after:
                return i
    return ack.position


def acknowledged(series: Series, change: Change, acks: Sequence[Ack]) -> Ack | None:
    """The acknowledgement of ``change`` (a regression of ``series``), if any: the same id,
    or the same series with the change at most ``NEAR`` points from where it was."""
    cid = change_id(series, change)
    for a in acks:
        if a.key != series.key:
            continue
        if a.change_id == cid or abs(_position(series, a) - change.index) <= NEAR:
            return a
    return None
