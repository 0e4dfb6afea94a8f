"""The store's ``leases`` table: what a backend allocated for a run, from before its first
trial until it is released (docs/store.md). A lease left unreleased (the process was killed)
is what ``run --resume`` attaches to and ``benchlang hosts release`` gives back."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from benchlang.errors import SettingError, UserError

if TYPE_CHECKING:
    from benchlang.backends.base import Lease

LEASES_SCHEMA = """
CREATE TABLE IF NOT EXISTS leases (
    id TEXT PRIMARY KEY,
    plan_hash TEXT NOT NULL,
    kind TEXT NOT NULL,
    lease TEXT NOT NULL,
    spec_dir TEXT,
    acquired REAL NOT NULL,
    released REAL
)
"""


@attrs.frozen
class StoredLease:
    """A lease as the store holds it; ``released`` is None while the machines are held."""

    lease: Lease
    plan_hash: str
    spec_dir: str | None
    acquired: float
    released: float | None

    def cost(self, now: float | None = None) -> float | None:
        """What the lease cost when its price is known: price per hour x hours from acquired
        to released (to ``now`` while held; an estimate: providers bill in their own units)."""
        price = self.lease.price_per_hour
        if price is None:
            return None
        end = self.released if self.released is not None else now or time.time()
        return round(float(price) * max(0.0, end - self.acquired) / 3600.0, 6)

    def summary(self) -> str | None:
        """One line for the record: where the logical hosts ran and what they cost; None for a
        lease that allocated nothing (each host itself, no price)."""
        lease = self.lease
        moved = {k: v for k, v in lease.hosts.items() if k != v}
        if not moved and lease.price_per_hour is None:
            return None
        parts = [", ".join(f"{k}={v}" for k, v in moved.items())] if moved else []
        if lease.price_per_hour is not None:
            parts.append(f"{lease.price_per_hour:g}/h, cost {self.cost():.4g}")
        return f"lease {lease.id[:12]} ({lease.kind}): " + "; ".join(parts)

    @property
    def state(self) -> str:
        if self.released is not None:
            return "released"
        if self.lease.expires is not None and self.lease.expires < time.time():
            return "expired (not released)"
        return "held"


class LeaseRows:
    """The lease methods of ``Store`` (mixed in; uses its connection and transactions)."""

    db: sqlite3.Connection | None
    _schema: int

    _write: Callable[..., None]

    def record_lease(self, plan_hash: str, lease: Lease, spec_dir: str | None = None) -> None:
        """Store a lease just acquired (one transaction), before any trial runs."""
        self._write(
            "INSERT INTO leases VALUES (?,?,?,?,?,?,NULL)",
            (lease.id, plan_hash, lease.kind, lease.to_json(), spec_dir, time.time()),
        )

    def update_lease(self, lease: Lease) -> None:
        """The lease after ``extend`` (a new deadline)."""
        self._write("UPDATE leases SET lease = ? WHERE id = ?", (lease.to_json(), lease.id))

    def mark_released(self, lease_id: str) -> None:
        self._write(
            "UPDATE leases SET released = ? WHERE id = ? AND released IS NULL",
            (time.time(), lease_id),
        )

    def leases(self, plan_hash: str | None = None) -> list[StoredLease]:
        """Every lease (of one plan), oldest first; none in a store older than schema 3."""
        if self._schema < 3 or self.db is None:
            return []
        sql = "SELECT lease, plan_hash, spec_dir, acquired, released FROM leases"
        rows = (
            self.db.execute(sql + " WHERE plan_hash = ? ORDER BY acquired", (plan_hash,))
            if plan_hash is not None
            else self.db.execute(sql + " ORDER BY acquired")
        )
        stored = rows.fetchall()
        if not stored:
            return []
        from benchlang.backends.base import Lease  # here: a store without leases needs none

        return [StoredLease(Lease.from_json(row[0]), *row[1:]) for row in stored]

    def open_lease(self, plan_hash: str) -> StoredLease | None:
        """The newest unreleased lease of a plan (``--resume`` attaches to it)."""
        held = [s for s in self.leases(plan_hash) if s.released is None]
        return held[-1] if held else None


RELEASE_TIMEOUT = 600.0
"""Seconds a release may take before the run gives up on it (the lease stays unreleased in
the store, for ``benchlang hosts release``)."""


class LeaseKeeper:
    """The executor's side of the lease lifecycle: acquire (or, on ``--resume``, attach to the
    unreleased lease stored for this plan), commit it before any trial, keep the deadline
    (extend with the backend's ``extend`` capability), release and mark it released."""

    def __init__(
        self, backend: Any, store: LeaseRows, plan_hash: str, spec_dir: str | None = None
    ) -> None:
        self.backend = backend
        self.store = store
        self.plan_hash = plan_hash
        self.spec_dir = spec_dir
        self.lease: Lease | None = None
        self.notes: list[str] = []
        import asyncio  # here, not at the top: every store reader imports this module

        self._extending = asyncio.Lock()

    async def take(self) -> Lease:
        from benchlang.backends.base import HostDown, acquire_lease, attach_lease

        stored = self.store.open_lease(self.plan_hash)
        if stored is not None:
            try:
                await attach_lease(self.backend, stored.lease)
                self.lease = stored.lease
                return stored.lease
            except (HostDown, OSError) as err:
                self.notes.append(
                    f"lease {stored.lease.id} could not be attached ({err}); released"
                )
                await self._release(stored.lease)
        try:
            lease = await acquire_lease(self.backend, None)
        except (HostDown, OSError, SettingError) as err:
            raise UserError(
                f"hosts {self.backend.kind}: cannot acquire the hosts: {err}",
                "nothing ran; the backend released what it had allocated",
            ) from None
        self.lease = lease
        try:
            self.store.record_lease(self.plan_hash, lease, self.spec_dir)
        except BaseException:
            await self._release(lease, stored=False)
            raise
        return lease

    def address(self, host: str) -> str | None:
        """Where the lease put a logical host, when that is not the name itself."""
        address = self.lease.hosts.get(host) if self.lease is not None else None
        return address if address not in (None, host) else None

    async def give_back(self) -> str | None:
        """Release the lease; the reason when it failed (the lease stays unreleased)."""
        if self.lease is None:
            return None
        return await self._release(self.lease)

    async def _release(self, lease: Lease, stored: bool = True) -> str | None:
        import asyncio

        from benchlang.backends.base import release_lease

        try:
            await asyncio.wait_for(release_lease(self.backend, lease), RELEASE_TIMEOUT)
        except (Exception, asyncio.CancelledError) as err:
            return f"releasing lease {lease.id} failed: {type(err).__name__}: {err}"
        if stored:
            self.store.mark_released(lease.id)
        return None

    async def time_left(self, needed: float, more: float) -> str | None:
        """None when ``needed`` seconds from now fit before the lease expires (extending it,
        by ``more`` seconds past that, when the backend can); else why the round cannot start."""
        lease = self.lease
        if lease is None or lease.expires is None or needed <= 0:
            return None
        now = time.time()
        if now + needed <= lease.expires:
            return None
        from benchlang.backends.base import HostDown, capabilities_of

        if "extend" in capabilities_of(self.backend):
            async with self._extending:
                lease = self.lease or lease  # another host task may have extended it
                until = now + needed + more
                if lease.expires is None or lease.expires < until:
                    try:
                        lease = await self.backend.extend(lease, until)
                    except (HostDown, OSError) as err:
                        self.notes.append(f"extending lease {lease.id} failed: {err}")
                    else:
                        self.lease = lease
                        self.store.update_lease(lease)
            if lease.expires is None or now + needed <= lease.expires:
                return None
        ends = time.strftime("%H:%M:%S UTC", time.gmtime(lease.expires))
        return f"the lease {lease.id} ends at {ends}, before a round estimated at {needed:.0f}s could finish"
