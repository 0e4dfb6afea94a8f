"""Backend protocol version 2 (benchlang.backends.base): leases, versions, capabilities."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from benchlang.backends.base import (
    PROTOCOL_VERSION,
    Lease,
    Secret,
    acquire_lease,
    capabilities_of,
    protocol_of,
    release_lease,
)
from benchlang.backends.local import LocalBackend
from benchlang.backends.registry import describe_plugins
from benchlang.backends.ssh import SshBackend


class OldBackend:
    """A version-1 plugin: no protocol, no lease methods."""

    kind = "old"
    supports_reboot = True

    def hosts(self) -> tuple[str, ...]:
        return ("a", "b")


def test_lease_round_trips_through_json():
    lease = Lease(
        "exp-1",
        "cloud",
        {"node0": "10.0.0.5"},
        ({"node": "i-123", "hardware": "m510"},),
        0.42,
        1_900_000_000.0,
        {"experiment": "exp-1"},
    )
    text = lease.to_json()
    assert json.loads(text)["hosts"] == {"node0": "10.0.0.5"}
    assert Lease.from_json(text) == lease


def test_a_version_1_backend_gets_a_lease_that_allocates_nothing():
    old = OldBackend()
    assert protocol_of(old) == 1 and capabilities_of(old) == {"reboot"}
    lease = asyncio.run(acquire_lease(old))
    assert lease.kind == "old" and dict(lease.hosts) == {"a": "a", "b": "b"}
    assert lease.resources == () and lease.expires is None
    asyncio.run(release_lease(old, lease))  # nothing to release, no error


def test_builtin_backends_declare_protocol_2():
    assert protocol_of(LocalBackend) == PROTOCOL_VERSION
    assert capabilities_of(LocalBackend) == frozenset({"aslr", "pin", "memory", "cpu_time"})
    assert protocol_of(SshBackend) == PROTOCOL_VERSION
    assert {"reboot", "pin", "memory", "cpu_time"} <= capabilities_of(SshBackend)
    local = LocalBackend.from_settings({"slots": 2}, Path("."))
    lease = asyncio.run(local.acquire(None))
    assert dict(lease.hosts) == {"local:0": "local:0", "local:1": "local:1"}
    asyncio.run(local.release(lease))
    asyncio.run(local.release(lease))  # idempotent


def test_plugins_shows_each_backends_protocol():
    rows = {r["name"]: r for r in describe_plugins() if r["group"] == "benchlang.backends"}
    assert rows["local"]["protocol"] == "2" and rows["pinned"]["protocol"] == "2"


def test_a_secret_is_masked():
    secret = Secret("API_TOKEN", "s3cr3t-value")
    assert "s3cr3t" not in repr(secret) and "s3cr3t" not in str(secret)
    assert "s3cr3t" not in f"{secret}" and secret.reveal() == "s3cr3t-value"
