"""``benchlang hosts``: the leases a store holds, and releasing those a crash left behind.

A run releases its lease itself, also on Ctrl-C and SIGTERM; only a killed process (SIGKILL,
power loss) leaves one held. Releasing it opens the run's backend from the spec stored with
the run (its ``from env`` secrets read from the environment now) and calls ``release``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import attrs

from benchlang.app.spec import open_backend_in
from benchlang.backends.base import Lease, release_lease
from benchlang.backends.registry import backend_kinds
from benchlang.errors import UserError
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import Source
from benchlang.run.leases import StoredLease
from benchlang.run.store import Store


def stored_leases(store_path: str | Path) -> list[StoredLease]:
    """Every lease of every run in a store, oldest first (read-only)."""
    with Store(store_path) as store:
        return store.leases()


@attrs.frozen
class Released:
    lease: Lease
    error: str | None = None


def release_leases(store_path: str | Path, lease_id: str | None = None) -> list[Released]:
    """Release every lease the store holds unreleased (or the one named by id or prefix),
    marking each released in the store once its backend has given the hosts back."""
    with Store(store_path, write=True) as store:
        held = [s for s in store.leases() if s.released is None]
        if lease_id is not None:
            held = [s for s in held if s.lease.id.startswith(lease_id)]
            if not held:
                known = ", ".join(s.lease.id[:12] for s in store.leases()) or "none"
                raise UserError(
                    f"{store_path} holds no unreleased lease {lease_id}",
                    f"leases here: {known} (see benchlang hosts list {store_path})",
                )
        out = []
        for stored in held:
            error = _release_one(store, stored)
            if error is None:
                store.mark_released(stored.lease.id)
            out.append(Released(stored.lease, error))
        return out


def _release_one(store: Store, stored: StoredLease) -> str | None:
    plan = store.plan(stored.plan_hash)
    if plan.spec_text is None:
        return "the run's spec is not in the store"
    spec_dir = Path(stored.spec_dir or Path(plan.spec_path or ".").parent)
    try:
        experiment = compile_source(
            Source(plan.spec_path or "<stored spec>", plan.spec_text),
            spec_dir,
            backends=backend_kinds(),
        )
        backend = open_backend_in(experiment, spec_dir)
        asyncio.run(release_lease(backend, stored.lease))
    except UserError as err:
        return err.message + (f" ({err.hint})" if err.hint else "")
    except Exception as err:
        return f"{type(err).__name__}: {err}"
    return None


def sweep(spec_path: str | Path, stores: list[str | Path], destroy: bool = True) -> list[str]:
    """Machines a backend with the ``tags`` capability finds carrying a benchlang lease tag,
    except the leases still held in ``stores`` (a run may resume on them): destroyed unless
    ``destroy`` is False. For leases whose store is lost."""
    from benchlang.app.spec import compile_spec, open_backend
    from benchlang.backends.base import capabilities_of

    experiment = compile_spec(spec_path).experiment
    backend = open_backend(experiment, spec_path)
    if "tags" not in capabilities_of(backend) or not hasattr(backend, "sweep"):
        raise UserError(
            f"hosts {experiment.hosts.kind} cannot find its machines by tag",
            "release leases with benchlang hosts release STORE",
        )
    keep: set[str] = set()
    for path in stores:
        keep |= {s.lease.id for s in stored_leases(path) if s.released is None}
    return asyncio.run(backend.sweep(frozenset(keep), destroy))


def describe(stored: StoredLease) -> dict[str, object]:
    """One lease as ``hosts list`` shows it (and ``--json`` prints it)."""
    lease = stored.lease
    return {
        "id": lease.id,
        "kind": lease.kind,
        "state": stored.state,
        "plan": stored.plan_hash,
        "hosts": dict(lease.hosts),
        "resources": [dict(r) for r in lease.resources],
        "price_per_hour": lease.price_per_hour,
        "cost": stored.cost(),
        "acquired": _utc(stored.acquired),
        "expires": _utc(lease.expires),
        "released": _utc(stored.released),
    }


def _utc(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
