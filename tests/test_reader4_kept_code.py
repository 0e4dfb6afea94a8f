"""Fourth reader: the kept points' code record (app/history/kept_code.py).

1. The source digest is relative paths, sizes and mtimes, without the package's location: a
   benchlang tree B that is a copy of tree A keeping mtimes (``cp -p``, ``rsync -a``, ``tar``;
   Nix's store, where every file's mtime is 1 and another build is another directory) with a
   same-size edit whose mtime is restored passes for A: ``history add`` run from B takes the
   points A computed, where compiling gives other ones.
2. The CI flow ``pip install . && benchlang run spec --store s.sqlite`` keeps no points: a
   source or ``*.dist-info`` newer than the process's start less 1 s (whose boot time is whole
   seconds: up to 2 s) makes ``record`` return None, and an install ends well within that.
   Measured with a real venv (pip install --no-deps of this tree, then run at once): 7 of 7
   runs kept nothing, with ``sleep 1`` between them too; with ``sleep 2``, 3 of 3 kept.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SPEC = """benchlang 1
experiment kept {
  seed 3
  factor k in [1, 2]
  benchmark draw {
    run "awk -v k={k} -v t=$BENCHLANG_TRIAL 'NR == t + 1 {{ print k * $1 }}' NOISE"
    measure v from stdout regex "([0-9.]+)"
  }
  metric v { measure mean unit "s" better lower }
  kpi v { percentile 50 confidence 90% }
  design { runs 5 series 3 order random }
}
"""


def _tree(where: Path) -> Path:
    """A copy of benchlang's package (and its grammar) as a PYTHONPATH entry, files new."""
    where.mkdir()
    shutil.copytree(ROOT / "benchlang", where / "benchlang", copy_function=shutil.copyfile,
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    if (ROOT / "grammars").is_dir():
        os.symlink(ROOT / "grammars", where / "grammars")
    return where


def _benchlang(tree: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tree))
    return subprocess.run([sys.executable, "-m", "benchlang", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def _spec(tmp_path: Path) -> Path:
    rng = __import__("numpy").random.default_rng(71)
    noise = tmp_path / "noise.txt"
    noise.write_text("".join(f"{v:.9f}\n" for v in rng.lognormal(0, 0.1, 200)))
    spec = tmp_path / "kept.bench"
    spec.write_text(SPEC.replace("NOISE", str(noise)))
    return spec


def _kept(store: Path) -> bool:
    with sqlite3.connect(store) as db:
        return bool(db.execute("SELECT 1 FROM meta WHERE key LIKE 'history_points %'").fetchall())


def test_add_from_another_tree_with_the_same_sizes_and_mtimes_compiles(tmp_path):
    spec = _spec(tmp_path)
    a = _tree(tmp_path / "a")
    for file in (a / "benchlang").rglob("*"):
        os.utime(file, (1, 1))  # as Nix's store keeps every file
    b = tmp_path / "b"
    b.mkdir()
    shutil.copytree(a / "benchlang", b / "benchlang")  # copy2: mtimes kept
    if (ROOT / "grammars").is_dir():
        os.symlink(ROOT / "grammars", b / "grammars")
    points = b / "benchlang" / "history" / "points.py"
    before = os.stat(points)
    text = points.read_text()
    assert text.count("np.percentile(values, p)") == 1
    points.write_text(text.replace("np.percentile(values, p)", "np.percentile(values, 9)"))
    os.utime(points, ns=(before.st_atime_ns, before.st_mtime_ns))
    store = tmp_path / "kept.sqlite"
    done = _benchlang(a, tmp_path, "run", str(spec), "--store", str(store), "-q")
    assert done.returncode == 0, done.stderr
    if not _kept(store):
        pytest.skip("run kept no points (files changed within 20 ms of its start)")
    bare = tmp_path / "bare.sqlite"
    shutil.copy(store, bare)
    with sqlite3.connect(bare) as db:
        db.execute("DELETE FROM meta WHERE key LIKE 'history_points %'")
    added = []
    for name, source in (("kept", store), ("compiled", bare)):
        history = tmp_path / f"{name}.history"
        done = _benchlang(b, tmp_path, "history", "add", str(source), "--history", str(history),
                          "--no-commit", "--date", "2026-01-02T03:04:05Z")  # fmt: skip
        assert done.returncode == 0, done.stderr
        with sqlite3.connect(history) as db:
            added.append(db.execute("SELECT metric, configuration, value, lower, upper "
                                    "FROM points ORDER BY 1, 2").fetchall())  # fmt: skip
    assert added[0] == added[1]


def test_a_run_started_right_after_an_install_keeps_its_points(tmp_path):
    spec = _spec(tmp_path)
    tree = _tree(tmp_path / "installed")  # as an install leaves it: every file just written
    time.sleep(0.1)  # the install's process has ended (pip's own exit takes longer than this)
    store = tmp_path / "kept.sqlite"
    done = _benchlang(tree, tmp_path, "run", str(spec), "--store", str(store), "-q")
    assert done.returncode == 0, done.stderr
    assert _kept(store)


def test_an_edit_of_a_methods_implementation_package_makes_add_compile(tmp_path):
    """A plugin declares ``rdemo`` in ``declpkg``; its ``Method.implementation`` is
    ``implpkg.impl:kpi`` (another top-level package, of the same distribution or of a library
    it depends on). An ordinary edit of ``implpkg`` after the run (mtime now) goes unseen."""
    plug = tmp_path / "plug"
    (plug / "declpkg").mkdir(parents=True)
    (plug / "implpkg").mkdir()
    (plug / "declpkg" / "__init__.py").write_text(
        "import attrs\nfrom benchlang.stats.methods import THOMPSON as _T\n"
        "RDEMO = attrs.evolve(_T, name='rdemo', implementation='implpkg.impl:kpi')\n"
    )
    (plug / "implpkg" / "__init__.py").write_text("")
    impl = plug / "implpkg" / "impl.py"
    impl.write_text(
        "from benchlang.stats.kpi import kpi as _k\n\n\n"
        "def kpi(values, *a, **k):\n    return _k(values * 1.0, *a, **k)\n"
    )
    info = plug / "declpkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: declpkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[benchlang.statistics]\nrdemo = declpkg:RDEMO\n")
    for path in [*plug.rglob("*"), plug]:
        os.utime(path, (1_600_000_000, 1_600_000_000))  # installed long before the run
    spec = _spec(tmp_path)
    spec.write_text(spec.read_text().replace("kpi v {", "kpi v with rdemo {"))
    where = Path(f"{plug}{os.pathsep}{ROOT}")
    store = tmp_path / "kept.sqlite"
    done = _benchlang(where, tmp_path, "run", str(spec), "--store", str(store), "-q")
    assert done.returncode == 0, done.stderr
    assert not _kept(store)  # a plugin's KPI keeps no points: add computes it (docs/history.md)
    impl.write_text(impl.read_text().replace("values * 1.0", "values * 1.5"))
    bare = tmp_path / "bare.sqlite"
    shutil.copy(store, bare)
    with sqlite3.connect(bare) as db:
        db.execute("DELETE FROM meta WHERE key LIKE 'history_points %'")
    added = []
    for name, source in (("kept", store), ("compiled", bare)):
        history = tmp_path / f"{name}.history"
        done = _benchlang(where, tmp_path, "history", "add", str(source), "--history",
                          str(history), "--no-commit", "--date", "2026-01-02T03:04:05Z")  # fmt: skip
        assert done.returncode == 0, done.stderr
        with sqlite3.connect(history) as db:
            added.append(db.execute("SELECT metric, configuration, value, lower, upper, "
                                    "series_kpis FROM points ORDER BY 1, 2").fetchall())  # fmt: skip
    assert added[0] == added[1]
