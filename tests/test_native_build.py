"""benchlang.native and hatch_build.py: the C programs built with the package are used first and
need no compiler; a build of another source is never used; without a build each caller's
fallback runs (the numpy forms, the process-group launcher); a compile that fails is tried
once per compiler and source, not by every process."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from benchlang import native
from benchlang.backends import launcher as launcher_module
from benchlang.stats import _kernels as kernels

ROOT = Path(__file__).resolve().parents[1]
needs_cc = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

PROBE = """
import json, sys
from pathlib import Path
from benchlang import native
if len(sys.argv) > 1:
    native.SHIPPED = Path(sys.argv[1])
import numpy as np
from benchlang.backends.launcher import launcher
from benchlang.stats import _kernels as k
counts, first, m = np.array([[2, 1]], dtype=np.int32), np.array([0, 3]), np.array([3, 4])
drawn = k.draw_children(counts, first, m, 7, 11).tolist()
lib, path = k.native(), launcher().path
import os
os.environ[native.NATIVE_ENV] = "0"
print(json.dumps({"launcher": path, "kernels": lib and lib._name, "drawn": drawn,
                  "numpy": k.draw_children(counts, first, m, 7, 11).tolist(),
                  "native": native.__file__}))
"""


def without_a_compiler(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment with no C compiler on PATH, BENCHLANG_CC unset and an empty cache.

    ``bin/python`` is a script that execs this interpreter, not a symlink to it: a virtual
    environment's interpreter finds its ``pyvenv.cfg`` beside the path it was started by, so a
    symlink elsewhere would start the base Python, without this environment's packages."""
    env = {k: v for k, v in os.environ.items() if k not in (native.CC_ENV, native.NATIVE_ENV)}
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    python = bin_dir / "python"
    python.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    python.chmod(0o755)
    env.update(PATH=str(bin_dir), XDG_CACHE_HOME=str(tmp_path / "cache"), **extra)
    return env


def probe(cwd: Path, env: dict[str, str], *argv: str) -> dict:
    """Which builds a fresh interpreter in ``cwd`` uses (not the checkout's package)."""
    done = subprocess.run(
        [env["PATH"] + "/python", "-c", PROBE, *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty cache and no environment choices; the loaders' memos cleared around the test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(native.CC_ENV, raising=False)
    monkeypatch.delenv(native.NATIVE_ENV, raising=False)
    launcher_module._find.cache_clear()
    kernels._load.cache_clear()
    yield tmp_path
    launcher_module._find.cache_clear()
    kernels._load.cache_clear()


@pytest.fixture
def package(fresh, monkeypatch):
    """A copy of the package's C sources with its builds shipped, as a wheel holds them."""
    root = fresh / "pkg"
    for program in native.PROGRAMS:
        (root / program.source).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(native.PACKAGE / program.source, root / program.source)
    monkeypatch.setattr(native, "PACKAGE", root)
    monkeypatch.setattr(native, "SHIPPED", root / "_native")
    assert native.ship(native.SHIPPED) == {"launcher": "", "kernels": ""}
    return root


@needs_cc
def test_the_shipped_build_comes_first_and_needs_no_compiler(fresh):
    shipped = fresh / "shipped"
    assert native.ship(shipped) == {"launcher": "", "kernels": ""}
    got = probe(fresh, without_a_compiler(fresh), str(shipped))
    assert Path(got["launcher"]).parent == shipped
    assert Path(got["kernels"]).parent == shipped
    assert got["drawn"] == got["numpy"]  # the shipped kernels run, same integers
    assert not (fresh / "cache").exists()  # nothing compiled at first use


@needs_cc
def test_a_build_of_another_source_is_never_used(package):
    path, _ = native.find(native.KERNELS)
    assert path == native.SHIPPED / native.KERNELS.file_name()
    source = package / native.KERNELS.source
    source.write_text(source.read_text() + "\n/* changed */\n")
    stale = path
    path, why = native.find(native.KERNELS)
    assert why == "" and path.parent == native.cache_dir() and path.name != stale.name
    assert stale.exists()  # still there, not used


@needs_cc
def test_builds_of_the_same_source_with_other_flags_are_different_builds():
    flags = native.KERNELS.flag_sets
    other = native.Program("kernels", native.KERNELS.source, (("-O0", *flags[0][1:]),))
    assert other.file_name() != native.KERNELS.file_name()


@needs_cc
def test_the_environment_chooses(package, monkeypatch):
    monkeypatch.setenv(native.CC_ENV, "cc")  # a build by this compiler, not the shipped one
    assert launcher_module.launcher().path.startswith(str(native.cache_dir()))
    monkeypatch.setenv(native.NATIVE_ENV, "0")
    assert launcher_module.launcher() == launcher_module.Launcher(None, "BENCHLANG_NATIVE=0")
    assert kernels.native() is None
    monkeypatch.delenv(native.NATIVE_ENV)
    monkeypatch.delenv(native.CC_ENV)
    assert Path(launcher_module.launcher().path).parent == native.SHIPPED


def test_without_any_build_the_fallbacks_run(fresh, monkeypatch):
    """The process-group launcher (max_rss unavailable, with the reason) and the numpy forms."""
    from benchlang.backends.base import Command
    from benchlang.backends.local import LocalSession
    from benchlang.stats.headline import rank

    monkeypatch.setenv(native.NATIVE_ENV, "0")
    session = LocalSession("local", fresh)
    try:
        run = session.run_blocking(Command("echo v=1"))
        facts = asyncio.run(session.facts())
    finally:
        asyncio.run(session.close())
    assert run.ok and run.stdout == b"v=1\n"
    assert "BENCHLANG_NATIVE=0" in run.unavailable["max_rss"]
    assert facts["launcher"] == "none (BENCHLANG_NATIVE=0)"
    assert kernels.native() is None
    rng = np.random.default_rng(1)
    config, series = np.repeat([0, 1], 400), np.tile(np.repeat(np.arange(20), 20), 2)
    clusters = np.stack([series, series * 20 + np.tile(np.arange(20), 40)], axis=1)
    values = np.exp(np.array([0.0, 0.2])[config] + rng.normal(0, 0.05, config.size))
    ranking = rank(values, config, clusters, replicates=200, seed=3)
    assert ranking.order[0] == 0 and ranking.comparisons[0].clear


def test_a_missing_compiler_at_install_builds_nothing_and_says_why(tmp_path):
    done = native.ship(tmp_path, cc=str(tmp_path / "no-such-cc"))
    assert set(done) == {"launcher", "kernels"}
    assert all("no-such-cc" in why for why in done.values())
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "file").write_text("")  # a directory that cannot be made: said, not raised
    assert all("cannot write" in why for why in native.ship(tmp_path / "file" / "x").values())


@needs_cc
def test_a_source_that_does_not_compile_says_why(tmp_path):
    (tmp_path / "broken.c").write_text("int main( {\n")
    broken = native.Program("broken", "broken.c", (("-O2",),))
    why = native.compile_to(broken, tmp_path / "out" / "broken", root=tmp_path)
    assert why.startswith("cc failed")
    assert list((tmp_path / "out").iterdir()) == []  # no half-written build left


@needs_cc
@pytest.mark.slow
def test_a_platform_wheel_carries_the_builds_and_runs_them_without_a_compiler(tmp_path):
    """``BENCHLANG_PLATFORM_WHEEL=1 pip wheel .``: the builds in benchlang/_native and a platform
    tag; the package unpacked from it uses them with no compiler on PATH. A platform wheel
    whose build fails is an error, not a pure wheel under a platform's name (the default, pure
    wheel: tests/test_wheel_install.py)."""
    env = {k: v for k, v in os.environ.items() if k != native.CC_ENV}

    def wheel(out: Path, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
             "-w", str(out), str(ROOT)],
            env={**env, "BENCHLANG_PLATFORM_WHEEL": "1", **extra},
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )  # fmt: skip

    done = wheel(tmp_path / "wheel")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "benchlang: built launcher with cc" in done.stdout + done.stderr
    (built,) = (tmp_path / "wheel").glob("benchlang-*.whl")
    assert "-py3-none-linux_" in built.name
    site = tmp_path / "site"
    with zipfile.ZipFile(built) as archive:
        names = archive.namelist()
        archive.extractall(site)
    names = {Path(n).name for n in names if n.startswith("benchlang/_native/")}
    assert names == {p.file_name() for p in native.PROGRAMS}
    for name in names:
        (site / "benchlang/_native" / name).chmod(0o755)  # zipfile drops the mode; pip keeps it
    got = probe(tmp_path, without_a_compiler(tmp_path, PYTHONPATH=str(site)))
    assert got["native"] == str(site / "benchlang/native.py")
    assert Path(got["launcher"]).parent == site / "benchlang/_native"
    assert Path(got["kernels"]).parent == site / "benchlang/_native"

    failed = wheel(tmp_path / "failed", **{native.CC_ENV: str(tmp_path / "no-such-cc")})
    assert failed.returncode != 0 and not list((tmp_path / "failed").glob("*.whl"))
    assert (
        "not built for a platform wheel: cannot run the C compiler" in failed.stdout + failed.stderr
    )


def failing_compiler(tmp_path: Path, seconds: float = 0.0) -> Path:
    """A stand-in C compiler that takes ``seconds`` and then refuses, saying why."""
    cc = tmp_path / "failing-cc"
    sleep = shutil.which("sleep")
    cc.write_text(f"#!/bin/sh\n{sleep} {seconds}\necho 'failing-cc: refused' >&2\nexit 1\n")
    cc.chmod(0o755)
    return cc


def test_a_failed_compile_is_recorded_once_and_not_retried(fresh, monkeypatch):
    """The second find reads the recorded reason instead of running the compiler again; system
    show says so; another compiler (another key) is tried afresh."""
    from benchlang.app.system import builds

    cc = failing_compiler(fresh)
    calls = fresh / "calls"
    cc.write_text(cc.read_text().replace("\n", f"\necho x >> {calls}\n", 1))
    path, why = native.find(native.KERNELS, str(cc))
    assert path is None and why.startswith(f"{cc} failed: failing-cc: refused")
    marker = native.failure_marker(native.KERNELS, str(cc))
    assert marker.read_text().strip() == why and calls.read_text() == "x\n"
    path, again = native.find(native.KERNELS, str(cc))
    assert path is None and again.startswith(why) and f"recorded in {marker}" in again
    assert calls.read_text() == "x\n"  # not run a second time
    monkeypatch.setenv(native.CC_ENV, str(cc))
    assert builds()["kernels"].startswith("none: compile failed once, not retried: " + why)
    other = fresh / "other-cc"
    shutil.copy(cc, other)
    assert native.failure_marker(native.KERNELS, str(other)) != marker
    assert native.find(native.KERNELS, str(other))[0] is None
    assert calls.read_text() == "x\nx\n"
    marker.unlink()  # removing the record retries
    native.find(native.KERNELS, str(cc))
    assert calls.read_text() == "x\nx\nx\n"


def test_a_failed_compile_costs_the_next_process_nothing(tmp_path):
    """Process boundary tested: a failure recorded by one process is read by the next, which
    does not wait for the compiler (a stand-in that takes 1 s before failing)."""
    import time

    cc = failing_compiler(tmp_path, seconds=1)
    env = {**without_a_compiler(tmp_path), native.CC_ENV: str(cc)}
    took = []
    for _ in range(2):
        started = time.perf_counter()
        got = probe(tmp_path, env)
        took.append(time.perf_counter() - started)
        assert got["launcher"] is None and got["kernels"] is None
        assert got["drawn"] == got["numpy"]
    assert took[0] >= 2.0  # the launcher's two flag sets and the kernels: a second each
    assert took[1] < took[0] - 1.5
