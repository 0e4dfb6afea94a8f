"""Third reader: the kept points' stamp (app/history/kept.py) covered the store and benchlang's
version, not the version of a statistics plugin whose method computed them. A run with
``kpi v with hutson`` (benchlang-trimmed-mean 0.1.0) keeps its points; once the plugin is
0.2.0 and computes another bound, ``history add`` of the store as it is added the 0.1.0 points
(series KPIs, variability interval) while the same store without its kept points added the
0.2.0 ones. The kept points now record the code that computed them (``kept.code``: the
statistics distributions' versions, their sources): the upgrade makes ``add`` compile."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "plugins" / "benchlang-trimmed-mean" / "src" / "benchlang_trimmed_mean"

SPEC = """benchlang 1
experiment kept {
  seed 3
  factor k in [1, 2]
  benchmark draw {
    run "awk -v k={k} -v t=$BENCHLANG_TRIAL 'NR == t + 1 {{ print k * $1 }}' NOISE"
    measure v from stdout regex "([0-9.]+)"
  }
  metric v { measure mean unit "s" better lower }
  kpi v with hutson { percentile 50 confidence 90% }
  variability v { percentile 25 confidence 75% }
  design { runs 5 series 5 order random }
}
"""


def _plugin_020(where: Path) -> None:
    """benchlang-trimmed-mean 0.2.0: its hutson bound 10% higher, found first on the path."""
    shutil.copytree(PLUGIN, where / PLUGIN.name)
    code = where / PLUGIN.name / "quantile_bound.py"
    text = code.read_text()
    old = "value = float(x[i - 1] + (u - i) * (x[i] - x[i - 1]))"
    assert old in text
    code.write_text(text.replace(old, "value = 1.1 * " + old.removeprefix("value = ")))
    info = where / "benchlang_trimmed_mean-0.2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: benchlang-trimmed-mean\nVersion: 0.2.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[benchlang.statistics]\nhutson = benchlang_trimmed_mean:HUTSON\n"
        "trimmed_mean = benchlang_trimmed_mean:TRIMMED_MEAN\n"
    )


def _benchlang(argv: list[str], path: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run(
        [sys.executable, "-m", "benchlang", *argv], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def _points(history: Path) -> list[tuple]:
    with sqlite3.connect(history) as db:
        return db.execute(
            "SELECT metric, configuration, value, lower, upper, series_kpis FROM points "
            "ORDER BY metric, configuration"
        ).fetchall()


def test_a_plugin_upgrade_makes_add_recompute_the_kept_points(tmp_path):
    pytest.importorskip("benchlang_trimmed_mean")
    rng = __import__("numpy").random.default_rng(53)
    noise = tmp_path / "noise.txt"
    noise.write_text("".join(f"{v:.9f}\n" for v in rng.lognormal(0, 0.1, 400)))
    spec, store = tmp_path / "kept.bench", tmp_path / "kept.sqlite"
    spec.write_text(SPEC.replace("NOISE", str(noise)))
    done = _benchlang(["run", str(spec), "--store", str(store), "-q"], str(ROOT))
    assert done.returncode == 0, done.stderr
    bare = tmp_path / "bare.sqlite"
    shutil.copy(store, bare)
    with sqlite3.connect(bare) as db:
        db.execute("DELETE FROM meta WHERE key LIKE 'history_points %'")
    upgraded = tmp_path / "upgraded"
    upgraded.mkdir()
    _plugin_020(upgraded)
    path = f"{upgraded}{os.pathsep}{ROOT}"
    listed = _benchlang(["plugins"], path)
    assert "benchlang-trimmed-mean 0.2.0" in listed.stdout, listed.stdout
    assert _kept(store, str(ROOT)) == "stale"  # a plugin's KPI keeps no points (docs/history.md)
    assert _kept(store, path) == "stale"
    histories = []
    for name, source, where in (("kept", store, path), ("compiled", bare, path),
                                ("before", store, str(ROOT))):  # fmt: skip
        history = tmp_path / f"{name}.history"
        add = ["history", "add", str(source), "--history", str(history), "--no-commit"]
        done = _benchlang([*add, "--date", "2026-01-02T03:04:05Z"], where)
        assert done.returncode == 0, done.stderr
        histories.append(_points(history))
    assert histories[0] == histories[1]
    assert histories[0] != histories[2]  # 0.2.0's bound is not 0.1.0's


def _kept(store: Path, path: str) -> str:
    """Whether ``add`` with this ``sys.path`` takes the store's kept points."""
    code = (
        "import sys; from benchlang.app.history.kept import kept_points; "
        "print('current' if kept_points(sys.argv[1]) else 'stale')"
    )
    env = dict(os.environ, PYTHONPATH=path)
    done = subprocess.run([sys.executable, "-c", code, str(store)], env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
