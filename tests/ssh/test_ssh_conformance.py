"""The conformance kit (benchlang.testing.conformance) against the SSH backend and real sshd
servers on loopback; ``down`` kills a server (and its connections)."""

from __future__ import annotations

import pytest

from benchlang.backends.ssh import SshBackend
from benchlang.testing import conformance, sshd


@pytest.fixture
def ssh_case(needs_sshd, tmp_path):
    bed = sshd.Testbed(tmp_path / "sshd", 2)
    settings = {
        "nodes": tuple(bed.nodes),
        "identity": str(bed.identity),
        "known_hosts": str(bed.known_hosts),
    }

    async def down(backend, lease, host):
        bed.servers[bed.nodes.index(host)].kill()

    yield conformance.Case(
        make=lambda: SshBackend.from_settings(settings, tmp_path), down=down, timeout=60.0
    )
    bed.close()


@pytest.mark.parametrize("check", conformance.CHECKS, ids=conformance.names())
def test_ssh_backend_conforms(ssh_case, check):
    conformance.run(check, ssh_case)
