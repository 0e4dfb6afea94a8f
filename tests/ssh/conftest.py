"""Real OpenSSH servers on loopback ports for the SSH backend tests (each port a distinct host).

Skips only when /usr/sbin/sshd (or ssh-keygen) is missing. When the ``ssh`` backend is not yet
registered in benchlang's own entry points, a dist-info directory registering it is put on
sys.path (and on PYTHONPATH for CLI subprocesses), so specs with ``hosts ssh`` load exactly as
they will once it is registered.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from benchlang.testing.sshd import Testbed, sshd_missing

pytestmark = pytest.mark.ssh
SKIP = sshd_missing()


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/ssh/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.ssh)
            if SKIP and "needs_sshd" in item.fixturenames:
                item.add_marker(pytest.mark.skip(reason=SKIP))


@pytest.fixture(scope="session")
def needs_sshd() -> None:
    if SKIP:
        pytest.skip(SKIP)


@pytest.fixture(scope="session")
def ssh_env(tmp_path_factory) -> dict[str, str]:
    """Environment for ``benchlang`` subprocesses in which ``hosts ssh`` resolves."""
    from benchlang.backends.registry import backend_kinds

    env = dict(os.environ)
    if "ssh" in backend_kinds():
        return env
    root = tmp_path_factory.mktemp("entrypoints")
    info = root / "benchlang_ssh_tests-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: benchlang-ssh-tests\nVersion: 0\n")
    (info / "entry_points.txt").write_text(
        "[benchlang.backends]\nssh = benchlang.backends.ssh:SshBackend\n"
    )
    sys.path.append(str(root))
    backend_kinds.cache_clear()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(root)) if p)
    return env


@pytest.fixture(scope="session")
def sshd1(needs_sshd, tmp_path_factory):
    bed = Testbed(tmp_path_factory.mktemp("sshd1"), 1)
    yield bed
    bed.close()


@pytest.fixture(scope="session")
def sshd3(needs_sshd, tmp_path_factory):
    bed = Testbed(tmp_path_factory.mktemp("sshd3"), 3)
    yield bed
    bed.close()


@pytest.fixture
def fresh_sshd3(needs_sshd, tmp_path):
    """Three servers of this test's own, for tests that kill one."""
    bed = Testbed(tmp_path / "sshd", 3)
    yield bed
    bed.close()


class Harness:
    """Writes specs against a testbed and runs them through the real executor."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path

    @staticmethod
    def hosts(bed: Testbed, workdir: Path, nodes: list[str] | None = None, extra: str = "") -> str:
        listed = ", ".join(f'"{n}"' for n in (nodes if nodes is not None else bed.nodes))
        return (
            f'hosts ssh {{ nodes [{listed}] identity "{bed.identity}" known_hosts "{bed.known_hosts}" '
            f'workdir "{workdir}" {extra} }}'
        )

    def spec(self, body: str, name: str = "exp.bench") -> Path:
        path = self.tmp / name
        path.write_text("benchlang 1\nexperiment sshtest {\n" + body + "\n}\n")
        return path

    def prepare(self, spec: Path, store_path: Path | None = None, **executor_options):
        """(plan, store, executor) for ``spec``; the caller closes the store."""
        from benchlang.cli.plan import build_plan
        from benchlang.run.store import Store
        from tests.executors import quiet_executor

        experiment, backend, plan = build_plan(str(spec))
        store = Store(store_path or self.tmp / "results.sqlite", create=True)
        executor = quiet_executor(experiment, plan, backend, store, spec, **executor_options)
        return plan, store, executor

    def run(self, spec: Path, store_path: Path | None = None, **executor_options):
        """Run ``spec`` to the end; returns (plan, store, summary); the caller closes the store."""
        plan, store, executor = self.prepare(spec, store_path, **executor_options)
        return plan, store, asyncio.run(executor.run())


@pytest.fixture
def harness(ssh_env, tmp_path) -> Harness:
    return Harness(tmp_path)
