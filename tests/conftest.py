"""Root fixtures: the CLI in this process (``cli_here``, the default) or as a real subprocess
(``cli``, for tests of the process boundary: signals, exit codes on kill, the import budget,
the installed entry point), writers of small spec files, and one xdist group per testbed."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import textwrap
import warnings
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


def _text_stream(data: bytes = b"") -> io.TextIOWrapper:
    """A text stream with a ``buffer`` (commands that write bytes use ``sys.stdout.buffer``)."""
    return io.TextIOWrapper(
        io.BytesIO(data), encoding="utf-8", errors="replace", newline=None, write_through=True
    )


def cli_here(
    args: Sequence[object],
    cwd: str | Path | None = None,
    input: bytes | None = None,
    timeout: float = 120.0,
    env: dict[str, str] | None = None,
    environ: dict[str, str] | None = None,
    merged: bool = False,
) -> tuple[int, str, str]:
    """``benchlang.cli.main(ARGS)`` in this process, as ``cli`` runs it in another: its own cwd
    and environment (``COLUMNS=200``, plus ``env``; or exactly ``environ``), stdin from
    ``input``, stdout and stderr captured (``merged``: into one stream, in the order they were
    written, as a terminal shows them; stderr is then ""), Python warnings printed to the
    captured stderr as an interpreter would, and ``SystemExit`` (argparse's usage errors,
    ``--help``) as the status. ``timeout`` is accepted for the signature ``cli`` has; the
    test's own timeout bounds the call."""
    from benchlang.cli import main

    out = _text_stream()
    err = out if merged else _text_stream()

    def show(message, category, filename, lineno, file=None, line=None):
        err.write(warnings.formatwarning(message, category, filename, lineno, line))

    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        if environ is not None:
            for key in set(os.environ) - set(environ):
                patch.delenv(key)
        patch.setenv("COLUMNS", "200")
        for key, value in {**(env or {}), **(environ or {})}.items():
            patch.setenv(key, value)
        if cwd is not None:
            patch.chdir(cwd)
        patch.setattr(sys, "stdin", _text_stream(input or b""))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = main([str(a) for a in args])
            except SystemExit as stop:
                code = stop.code
                status = code if isinstance(code, int) else (0 if code is None else 2)
                if code is not None and not isinstance(code, int):
                    print(code, file=sys.stderr)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
    return (
        int(status or 0),
        out.buffer.getvalue().decode(errors="replace"),
        "" if merged else err.buffer.getvalue().decode(errors="replace"),
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
    """The CLI as a real subprocess: for tests of what only a process shows."""
    return cli


@pytest.fixture(scope="session")
def cli_in_process() -> Callable[..., tuple[int, str, str]]:
    """The CLI in this process (``cli_here``): 0.007 CPU-s a ``check`` against 0.45 started."""
    return cli_here


@pytest.fixture(scope="session")
def built_once(tmp_path_factory) -> Callable[[str, Callable[[Path], None]], Path]:
    """``built_once(key, build)``: a directory that ``build(directory)`` fills once per test
    session for ``key`` (the spec's text and seed, say: what makes the store what it is), and
    a copy of it for the caller, who may change it. Under ``pytest -n`` the workers share the
    one build: the first to ask makes it under a file lock in the run's common base
    directory, the others wait for it and copy."""
    import fcntl
    import hashlib
    import shutil

    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "built-once"
    shared.mkdir(exist_ok=True)

    def get(key: str, build: Callable[[Path], None]) -> Path:
        name = hashlib.sha256(key.encode()).hexdigest()[:16]
        made = shared / name
        with (shared / f"{name}.lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (made / ".built").exists():
                shutil.rmtree(made, ignore_errors=True)
                made.mkdir()
                build(made)
                (made / ".built").touch()
        copy = tmp_path_factory.mktemp(f"copy-{name}") / "built"
        shutil.copytree(made, copy, symlinks=True)
        return copy

    return get


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


TESTBEDS = {"needs_sshd": "testbed-sshd", "sshd1": "testbed-sshd", "sshd3": "testbed-sshd"}
"""Session fixtures that start a server: their tests share one xdist group (one worker starts
it under ``pytest -n``, ``--dist loadgroup``)."""


MACHINE_WIDE = (
    "machine_wide: writes a setting of the whole machine (/proc/sys); never run beside other "
    "tests: deselected under pytest -n, run alone by .ci/run (pytest -m machine_wide)"
)


def pytest_configure(config):
    config.addinivalue_line("markers", MACHINE_WIDE)
    version = tuple(int(part) for part in pytest.__version__.split(".")[:2] if part.isdigit())
    if _parallel(config) and _loadgroup(config) and version >= (9, 2):
        raise pytest.UsageError(
            f"pytest {pytest.__version__} reads a test's node id from _id, so pytest-xdist's "
            "loadgroup cannot group the testbeds' tests: install the test extra's pytest<9.2 "
            "(pip install -e '.[test]')"
        )


def _loadgroup(config) -> bool:
    """``--dist loadgroup`` (the controller's option; a worker also has ``loadgroup``)."""
    return getattr(config.option, "dist", None) == "loadgroup" or bool(
        getattr(config.option, "loadgroup", False)
    )


def _parallel(config) -> bool:
    """Under ``pytest -n N`` (N > 0): on the controller and on each worker."""
    return hasattr(config, "workerinput") or bool(config.getoption("numprocesses", None))


FIRST = ("wheel-install", "test_strict_outputs", "test_diff_sessions", "testbed-")
"""The longest xdist groups (a wheel built and installed, one -W error interpreter running
every command, sessions a second apart, the testbeds: sshd, Slurm, PostgreSQL): scheduled
first, so that under pytest -n none is left to run alone at the end."""


def _group(item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    if marker is None:
        return None
    return marker.args[0] if marker.args else marker.kwargs.get("name")


@pytest.hookimpl(trylast=True)  # after the plugins' conftests have named their groups
def pytest_collection_modifyitems(config, items):
    if _parallel(config):
        alone = [item for item in items if item.get_closest_marker("machine_wide")]
        if alone:
            config.hook.pytest_deselected(items=alone)
            items[:] = [item for item in items if item not in alone]
    for item in items:
        group = next((TESTBEDS[f] for f in item.fixturenames if f in TESTBEDS), None)
        if group is None and "tests/ssh/" in item.nodeid:
            group = "testbed-sshd"
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    if _parallel(config):
        items.sort(key=lambda item: not (_group(item) or "-").startswith(FIRST))
    if _loadgroup(config):
        _suffix_groups(items)


def _suffix_groups(items) -> None:
    """pytest-xdist's ``loadgroup`` sends the tests whose node id ends in ``@GROUP`` to one
    worker; it adds the suffix in its own collection hook, before this one has added the
    testbeds' groups, so the suffix is added here where missing. A node id that does not take
    it (pytest 9.2 reads ``nodeid`` from ``_id``) would scatter a group over the workers: each
    would start its own testbed, and a module's fixtures would be built once per worker."""
    for item in items:
        group = _group(item)
        if group is None or "@" in item.nodeid:
            continue
        item._nodeid = f"{item.nodeid}@{group}"
        if not item.nodeid.endswith(f"@{group}"):
            raise pytest.UsageError(
                f"xdist_group {group!r} cannot be applied to {item.nodeid} under this pytest "
                f"{pytest.__version__}: install the test extra's pytest (pyproject.toml)"
            )
