"""The local portal (benchlang_cloudlab.local_portal) with two loopback sshd nodes."""

from __future__ import annotations

import pytest
from benchlang_cloudlab.local_portal import Pki, PortalServer

from benchlang.testing import sshd


@pytest.fixture(scope="module")
def portal(tmp_path_factory):
    """A portal with its PKI and two loopback sshd nodes (module-wide)."""
    if sshd.sshd_missing():
        pytest.skip(str(sshd.sshd_missing()))
    root = tmp_path_factory.mktemp("portal")
    bed = sshd.Testbed(root / "nodes", 2)
    server = PortalServer(Pki(root), bed)
    server.root = root
    yield server
    server.shutdown()
    server.server_close()
    bed.close()
