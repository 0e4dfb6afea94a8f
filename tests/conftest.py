"""Root fixtures: the CLI as a real subprocess, and writers of small spec files."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs"
TEST_SPECS = Path(__file__).resolve().parent / "specs"


def cli(
    args: Sequence[str],
    cwd: str | Path | None = None,
    input: bytes | None = None,
    timeout: float = 120.0,
) -> tuple[int, str, str]:
    """Run ``python -m benchlang ARGS`` as a real subprocess: (status, stdout, stderr)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "benchlang", *map(str, args)],
        cwd=cwd,
        input=input,
        capture_output=True,
        timeout=timeout,
        env=env,
    )
    return (
        done.returncode,
        done.stdout.decode(errors="replace"),
        done.stderr.decode(errors="replace"),
    )


def cli_many(
    calls: Sequence[Sequence[str]],
    cwd: str | Path | Sequence[str | Path] | None = None,
    timeout: float = 120.0,
) -> list[tuple[int, str, str]]:
    """Several CLI calls at once (each a real subprocess), results in call order; ``cwd`` is
    one directory for all or a list with one per call."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"}
    cwds = list(cwd) if isinstance(cwd, (list, tuple)) else [cwd] * len(calls)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "benchlang", *map(str, args)],
            cwd=where,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for args, where in zip(calls, cwds, strict=True)
    ]
    out = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=timeout)
        out.append(
            (proc.returncode, stdout.decode(errors="replace"), stderr.decode(errors="replace"))
        )
    return out


@pytest.fixture(scope="session")
def run_cli_many() -> Callable[..., list[tuple[int, str, str]]]:
    return cli_many


@pytest.fixture(scope="session")
def run_cli() -> Callable[..., tuple[int, str, str]]:
    return cli


def spec_text(body: str, *, name: str = "t") -> str:
    """A complete spec around an experiment body (dedented)."""
    return f"benchlang 1\n\nexperiment {name} {{\n{textwrap.dedent(body).strip()}\n}}\n"


@pytest.fixture
def write_spec(tmp_path: Path) -> Callable[..., Path]:
    """Write a spec (a whole text, or an experiment body with ``body=True``) under tmp_path."""

    def write(text: str, name: str = "spec.bench", body: bool = True) -> Path:
        path = tmp_path / name
        path.write_text(spec_text(text) if body else textwrap.dedent(text), encoding="utf-8")
        return path

    return write


ASLR_LOCK = Path("/tmp/benchlang-tests-aslr.lock")


def _aslr_lock(mode: int):
    """The machine's ASLR setting is one for every test worker (``pytest -n``): a test that
    reads it holds a shared lock, the one that writes it (``system tune``) an exclusive one."""
    import fcntl

    handle = ASLR_LOCK.open("a")
    fcntl.flock(handle, mode)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


@pytest.fixture
def aslr_read():
    import fcntl

    yield from _aslr_lock(fcntl.LOCK_SH)


@pytest.fixture
def aslr_write():
    import fcntl

    yield from _aslr_lock(fcntl.LOCK_EX)
