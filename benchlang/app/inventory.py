"""The host inventory at plan time: each host's facts, read from the backend once per plan
(docs/hardware-factors.md). The plan records the facts it used, so the same spec, seed and
facts give the same plan, and analysing a stored run reads them back instead of asking again."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from benchlang.backends.base import FixedHosts
from benchlang.errors import UserError


def gather_inventory(backend: Any) -> dict[str, dict[str, str]]:
    """Each host's facts: the backend's ``inventory()`` when it has one (no allocation, no
    session); else, for a backend whose hosts exist without allocation (local, ssh), a
    session opened on each host for its ``facts()``."""
    if hasattr(backend, "inventory"):
        return asyncio.run(backend.inventory())
    if not isinstance(backend, FixedHosts):
        raise UserError(
            f"hosts {backend.kind} cannot tell its hosts' facts before allocating them",
            "hardware factors and 'hosts where' need a backend with inventory() (docs/plugins.md)",
        )
    return asyncio.run(_from_sessions(backend))


async def _from_sessions(backend: Any) -> dict[str, dict[str, str]]:
    async def one(host: str) -> dict[str, str]:
        try:
            session = await backend.open(host)
        except Exception as err:  # an unreachable host has no facts: excluded, said by plan
            return {"unreachable": str(err)}
        try:
            return dict(await session.facts())
        finally:
            await session.close()

    hosts = backend.hosts()
    found = await asyncio.gather(*(one(h) for h in hosts))
    return {h: f for h, f in zip(hosts, found, strict=True)}


def stored_inventory(plan_json: str) -> tuple[tuple[str, ...], dict[str, Any] | None]:
    """The backend hosts and the facts a stored plan was compiled with (None: it read none)."""
    document = json.loads(plan_json)
    record = document.get("inventory")
    if record is None:
        return tuple(document.get("hosts", ())), None
    return tuple(record["hosts"]), record["facts"]
