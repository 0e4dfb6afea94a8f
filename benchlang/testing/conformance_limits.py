"""The conformance kit's checks of the machine block's limits (docs/plugins.md#kit): each
runs only for a capability the backend states (``pin``, ``memory``, ``cpu_time``) and
verifies it from inside the trial, on the backend's first host. A capability not stated is a
skip with the reason; one stated but not enforced on the host is a failure.

- ``pinning``: a trial with ``cpus [0]`` reads ``Cpus_allowed_list`` 0 in its command and in a
  child of it (affinity is inherited), and the next trial without limits is not held to it.
- ``memory_limit``: under ``memory 64MiB`` a trial touching 256 MiB fails as "out of memory
  (limit 64 MiB)", one touching 16 MiB succeeds with its ``memory_peak`` stored (KiB).
- ``cpu_time_limit``: a busy loop under ``time 300ms`` is killed and fails as "CPU time limit
  (0.3 s) exceeded", not as a timeout, with its CPU time at least the limit.
"""

from __future__ import annotations

from typing import Any

from benchlang.backends.base import Command, capabilities_of
from benchlang.model import Machine


class Skip(Exception):
    """A check that cannot apply to this backend here (its reason says why)."""


MIB = 2**20
ALLOCATE = "python3 -c \"b = bytearray({n} << 20); b[::4096] = b'x' * len(b[::4096])\""
"""Touch every page of ``n`` MiB: untouched pages are never charged to the cgroup."""
AFFINITY = (
    "sh -c 'grep Cpus_allowed_list /proc/$$/status; grep Cpus_allowed_list /proc/self/status'"
)


async def _on_first_host(case: Any, capability: str) -> Any:
    backend, _lease = await case.acquire()
    if capability not in capabilities_of(backend):
        raise Skip(f"the backend does not state the '{capability}' capability")
    return await backend.open(backend.hosts()[0])


async def pinning(case: Any) -> None:
    """``cpus [0]``: Cpus_allowed_list 0 in the command and its child; not after it."""
    session = await _on_first_host(case, "pin")
    try:
        pinned = await session.execute(Command(AFFINITY, timeout=60, limits=Machine(cpus=(0,))))
        assert pinned.ok, pinned
        lists = [line.split(":")[1].strip() for line in pinned.stdout.decode().splitlines()]
        assert lists == ["0", "0"], f"Cpus_allowed_list inside the pinned trial: {lists}"
        free = await session.execute(Command(AFFINITY, timeout=60))
        assert free.ok, free
        cores = (await session.facts()).get("cores", "1")
        if cores.isdigit() and int(cores) > 1:
            assert b"Cpus_allowed_list:\t0\n" not in free.stdout, "pinning outlived its trial"
    finally:
        await session.close()


async def memory_limit(case: Any) -> None:
    """``memory 64MiB``: 256 MiB touched fails as out of memory; 16 MiB succeeds, peak stored."""
    session = await _on_first_host(case, "memory")
    limits = Machine(memory=64 * MIB)
    try:
        over = await session.execute(Command(ALLOCATE.format(n=256), timeout=120, limits=limits))
        assert not over.ok, f"256 MiB touched under a 64 MiB limit succeeded: {over}"
        assert over.failure == "out of memory (limit 64 MiB)", over.failure or over
        under = await session.execute(Command(ALLOCATE.format(n=16), timeout=120, limits=limits))
        assert under.ok, under
        peak = under.rusage.get("memory_peak")
        assert peak is not None, f"no memory_peak: {dict(under.unavailable)}"
        assert 16 * 1024 <= peak <= 64 * 1024, f"memory_peak {peak} KiB"
    finally:
        await session.close()


async def cpu_time_limit(case: Any) -> None:
    """``time 300ms``: a busy loop is killed at its CPU-time limit, not timed out."""
    session = await _on_first_host(case, "cpu_time")
    try:
        spin = Command("python3 -c 'while True: pass'", timeout=120, limits=Machine(cpu_time=0.3))
        done = await session.execute(spin)
        assert not done.ok and not done.timed_out, done
        assert done.failure == "CPU time limit (0.3 s) exceeded", done.failure or done
        assert done.rusage.get("cpu_time", 0.0) >= 0.3, dict(done.rusage)
    finally:
        await session.close()


LIMIT_CHECKS = (pinning, memory_limit, cpu_time_limit)
