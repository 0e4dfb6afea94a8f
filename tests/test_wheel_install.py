"""The installed package, process boundary tested: the wheel ``pip wheel .`` builds is pure
(``py3-none-any``, no machine code), installs into a fresh virtual environment that holds only
the distributions it declares (and theirs), and there, with no C compiler on PATH, the README's
quickstart runs (the numpy forms and the process-group launcher, the compile failure recorded
once) and ``benchlang system show`` says why there is no build. docs/install.md. The
quickstart's tools hash a 1 MiB file instead of 32 MiB: what runs is the same, the installed
package on every path it takes; 32 MiB only made each of its 75 trials longer."""

from __future__ import annotations

import importlib.metadata as metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPILERS = re.compile(r"^(cc|c89|c99|gcc|g\+\+|c\+\+|clang|clang\+\+|tcc|cpp)(-[0-9.]+)?$|-gcc")

pytestmark = pytest.mark.xdist_group("wheel-install")


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False, **kwargs)
    assert done.returncode == 0, f"{argv}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _declared_closure(wheel: Path) -> set[str]:
    """The distributions the wheel requires (no extra), and theirs, as installed here."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(meta).decode().splitlines()
    todo = [
        Requirement(v) for k, _, v in (ln.partition(": ") for ln in lines) if k == "Requires-Dist"
    ]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        dist = metadata.distribution(req.name)
        name = dist.metadata["Name"].lower().replace("_", "-")
        if name in seen:
            continue
        seen.add(name)
        todo += [Requirement(r) for r in dist.requires or ()]
    return seen


def _expose(names: set[str], site: Path) -> None:
    """Link each distribution's top-level files (its modules and its .dist-info) into the
    fresh environment's site-packages: the environment holds those and nothing else, without a
    download."""
    for name in names:
        dist = metadata.distribution(name)
        base = Path(dist.locate_file(""))
        for top in {Path(f).parts[0] for f in dist.files or ()}:
            source, link = base / top, site / top
            if top != ".." and source.exists() and not link.exists() and not top.endswith(".pth"):
                link.symlink_to(source)


def _tools_without_a_compiler(where: Path) -> Path:
    """A PATH directory with every program of this PATH except the C compilers."""
    where.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            if COMPILERS.search(entry.name) or (where / entry.name).exists():
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                (where / entry.name).symlink_to(entry.path)
    return where


def test_the_pure_wheel_installs_without_a_compiler_and_the_quickstart_runs(tmp_path):
    """Process boundary tested: a wheel build, a fresh venv, pip, and the installed entry point."""
    out = tmp_path / "wheel"  # hatchling, from the test extra: no download to build
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHLANG_")}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "-w", str(out), str(ROOT)], env=env)  # fmt: skip
    (wheel,) = out.glob("benchlang-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if "_native/" in n]  # no machine code

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
    site = Path(purelib.stdout.strip())
    assert site != Path(sysconfig.get_path("purelib"))
    _expose(_declared_closure(wheel), site)
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-index",
          "--find-links", str(out), "benchlang"], env=env)  # fmt: skip

    work = tmp_path / "work"
    work.mkdir()
    quickstart = (ROOT / "specs" / "quickstart.bench").read_text()
    assert "head -c 33554432 " in quickstart
    (work / "quickstart.bench").write_text(quickstart.replace("33554432", "1048576"))
    bare = {k: v for k, v in env.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    bare.update(
        PATH=f"{venv / 'bin'}{os.pathsep}{_tools_without_a_compiler(tmp_path / 'tools')}",
        HOME=str(tmp_path / "home"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    assert shutil.which("cc", path=bare["PATH"]) is None
    where = _run(
        [str(python), "-c", "import benchlang; print(benchlang.__file__)"], env=bare, cwd=work
    )
    assert Path(where.stdout.strip()).is_relative_to(site)
    benchlang = str(venv / "bin" / "benchlang")
    ran = _run([benchlang, "run", "quickstart.bench", "--store", "q.sqlite"], env=bare, cwd=work)
    assert "md5sum" in ran.stdout and "Traceback" not in ran.stderr
    # the quickstart's 5 series take the cluster-level t: the bootstrap's kernels, which a
    # ranking of 16 or more units loads, are asked for once here, as that ranking would
    _run([str(python), "-c", "from benchlang.stats._kernels import native; assert native() is None"],
         env=bare, cwd=work)  # fmt: skip
    shown = _run([benchlang, "system", "show"], env=bare, cwd=work).stdout
    builds = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in shown.splitlines()[-2:])
    for name in ("launcher", "kernels"):
        assert builds[f"{name} build"].startswith("none: compile failed once, not retried: ")
        assert "cannot run the C compiler 'cc'" in builds[f"{name} build"]
