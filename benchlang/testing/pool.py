"""``hosts pool { count 2  ledger "pool.json"  token from env "POOL_TOKEN" }``: a backend
that allocates, for testing the lease lifecycle without a cloud.

The "provider" is a JSON ledger file: ``acquire`` writes an allocation to it (refused without
the token), ``release`` removes it, ``extend`` moves its expiry, ``power`` (reboot,
power_cycle, reimage) appends to ``<ledger>.power``. Each logical host
``node<i>`` is given the address ``127.0.0.<i+2>``; its commands run on this machine through
benchlang's local session. After a run, the ledger says what is still allocated: a SIGKILL
leaves the allocation there, ``benchlang hosts release`` removes it. Registered by tests only
(``backend_kinds()["pool"] = PoolBackend``), never installed as a plugin.
"""

from __future__ import annotations

import fcntl
import json
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from benchlang.backends.base import (
    PROTOCOL_VERSION,
    HostDown,
    Lease,
    Secret,
    SettingError,
)
from benchlang.backends.local import LocalSession

__all__ = ["PoolBackend", "ledger"]


def ledger(path: str | Path) -> dict[str, Any]:
    """The allocations a pool ledger holds, by lease id."""
    path = Path(path)
    return json.loads(path.read_text()) if path.exists() else {}


class _Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> dict[str, Any]:
        self._fd = open(self.path.with_suffix(".lock"), "w")
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.data = ledger(self.path)
        return self.data

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.data, sort_keys=True))
            tmp.replace(self.path)
        self._fd.close()


class PoolSession(LocalSession):
    """A pool host's commands run here; after ``power`` it is back at once."""

    async def reconnect(self, timeout: float) -> None:
        return None


class PoolBackend:
    """Protocol 2 with allocation: see the module docstring."""

    kind: ClassVar[str] = "pool"
    protocol: ClassVar[int] = PROTOCOL_VERSION
    capabilities: ClassVar[frozenset[str]] = frozenset(
        {"extend", "tags", "reboot", "power_cycle", "reimage"}
    )
    secret_settings: ClassVar[frozenset[str]] = frozenset({"token"})
    KEYS: ClassVar[tuple[str, ...]] = ("count", "ledger", "token", "duration", "price")

    @classmethod
    def check_settings(cls, settings: Mapping[str, Any]) -> None:
        for key in settings:
            if key not in cls.KEYS:
                raise SettingError(key, f"unknown setting '{key}'", f"hosts pool: {cls.KEYS}")
        if type(settings.get("count")) is not int or settings["count"] < 1:
            raise SettingError("count", "count: a whole number of hosts, at least 1")
        if not isinstance(settings.get("ledger"), str):
            raise SettingError("ledger", "ledger: the path of the pool's JSON file")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], spec_dir: Path) -> PoolBackend:
        cls.check_settings(settings)
        token = settings.get("token")
        if not isinstance(token, Secret):
            raise SettingError("token", 'the pool needs token from env "NAME"')
        return cls(
            Path(spec_dir) / settings["ledger"],
            settings["count"],
            token,
            float(settings.get("duration", 3600)),
            settings.get("price"),
            Path(spec_dir),
        )

    def __init__(
        self,
        path: Path,
        count: int,
        token: Secret,
        duration: float = 3600.0,
        price: float | None = None,
        spec_dir: Path | None = None,
    ) -> None:
        self.path = Path(path)
        self.count = count
        self.token = token
        self.duration = duration
        self.price = price
        self.spec_dir = spec_dir
        self.lease: Lease | None = None

    def hosts(self) -> tuple[str, ...]:
        return tuple(f"node{i}" for i in range(self.count))

    async def acquire(self, deadline: float | None) -> Lease:
        if not self.token.reveal():
            raise HostDown("pool", "the pool refused an empty token")
        lease = Lease(
            uuid.uuid4().hex,
            self.kind,
            {h: f"127.0.0.{i + 2}" for i, h in enumerate(self.hosts())},
            tuple({"node_id": f"pool-{h}", "type": "loopback"} for h in self.hosts()),
            self.price,
            time.time() + self.duration,
            {"ledger": str(self.path)},
        )
        with _Ledger(self.path) as data:
            data[lease.id] = json.loads(lease.to_json())
        self.lease = lease
        return lease

    async def attach(self, lease: Lease) -> None:
        if lease.id not in ledger(self.path):
            raise HostDown("pool", f"the pool holds no allocation {lease.id}")
        self.lease = lease

    async def release(self, lease: Lease) -> None:
        with _Ledger(self.path) as data:
            data.pop(lease.id, None)
        if self.lease is not None and self.lease.id == lease.id:
            self.lease = None

    async def extend(self, lease: Lease, until: float) -> Lease:
        with _Ledger(self.path) as data:
            if lease.id not in data:
                raise HostDown("pool", f"the pool holds no allocation {lease.id}")
            data[lease.id]["expires"] = until
        self.lease = Lease.from_json(json.dumps(data[lease.id]))
        return self.lease

    async def power(self, host: str, action: str) -> None:
        """The "provider" reboots, power-cycles or reimages: a line ``host action`` appended
        to ``<ledger>.power`` (what a test reads back)."""
        if self.lease is None or host not in self.lease.hosts:
            raise HostDown(host, "cannot power: not allocated (no lease)")
        with open(f"{self.path}.power", "a") as log:
            log.write(f"{host} {action}\n")

    async def sweep(self, keep: frozenset[str], destroy: bool = True) -> list[str]:
        """Every allocation of the ledger not in ``keep``, released unless ``destroy`` is
        False (the pool "tags" each allocation with its lease id)."""
        with _Ledger(self.path) as data:
            found = [lease_id for lease_id in data if lease_id not in keep]
            if destroy:
                for lease_id in found:
                    del data[lease_id]
        return [f"allocation {lease_id}" for lease_id in found]

    async def open(self, host: str) -> PoolSession:
        if self.lease is None or host not in self.lease.hosts:
            raise HostDown(host, "cannot connect: not allocated (no lease)")
        return PoolSession(host, self.spec_dir)
