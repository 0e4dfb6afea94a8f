"""The conformance kit (benchlang.testing.conformance) against the local backend and the
allocating test pool; the SSH backend's run is in tests/ssh, the example plugin's in its own
package, the cloud plugins' in theirs."""

from __future__ import annotations

import pytest

from benchlang.backends.base import Secret
from benchlang.backends.local import LocalBackend
from benchlang.testing import conformance
from benchlang.testing.pool import PoolBackend, ledger

TOKEN = "pool-token-7f3a9c"


@pytest.fixture
def local_case(tmp_path):
    return conformance.Case(make=lambda: LocalBackend(tmp_path))


@pytest.fixture
def pool_case(tmp_path):
    async def down(backend, lease, host):
        await backend.release(lease)

    return conformance.Case(
        make=lambda: PoolBackend(tmp_path / "ledger.json", 2, Secret("POOL_TOKEN", TOKEN)),
        secrets=(TOKEN,),
        down=down,
    )


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.names())
def test_local_backend_conforms(local_case, check):
    conformance.run(check, local_case)


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.names())
def test_pool_backend_conforms(pool_case, tmp_path, check):
    conformance.run(check, pool_case)
    assert ledger(tmp_path / "ledger.json") == {}, "the kit released every lease it took"


def test_the_kit_fails_a_backend_that_leaks_its_secret(tmp_path):
    class Leaky(PoolBackend):
        def __repr__(self) -> str:
            return f"Leaky(token={self.token.reveal()})"

    case = conformance.Case(
        make=lambda: Leaky(tmp_path / "l.json", 1, Secret("T", TOKEN)), secrets=(TOKEN,)
    )
    with pytest.raises(AssertionError, match="secret"):
        conformance.run(conformance.secrets, case)
    assert ledger(tmp_path / "l.json") == {}


def test_the_kit_fails_a_backend_whose_release_is_not_idempotent(tmp_path):
    class Strict(PoolBackend):
        async def release(self, lease):
            if lease.id not in ledger(self.path):
                raise RuntimeError("unknown lease")
            await super().release(lease)

    case = conformance.Case(make=lambda: Strict(tmp_path / "s.json", 1, Secret("T", TOKEN)))
    with pytest.raises(RuntimeError, match="unknown lease"):
        conformance.run(conformance.lifecycle, case)
