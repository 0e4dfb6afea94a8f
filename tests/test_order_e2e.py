"""End to end: a real experiment with an ordering effect by construction is flagged by
`benchlang order`, and the same experiment without the effect is not (OrderSage, ATC 2023)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SPECS = Path(__file__).resolve().parents[1] / "specs"


def _order(tmp_path: Path, name: str, alpha: float = 0.05) -> list[dict]:
    spec = tmp_path / f"{name}.bench"
    shutil.copy(SPECS / f"{name}.bench", spec)
    store = tmp_path / f"{name}.sqlite"
    run = subprocess.run(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store), "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "Order dependence: fixed vs random order" in run.stdout
    out = subprocess.run(
        [sys.executable, "-m", "benchlang", "order", str(store), "--json", "--alpha", str(alpha)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow
def test_the_ordering_trap_is_flagged(tmp_path: Path) -> None:
    rows = {r["configuration"]: r for r in _order(tmp_path, "order-trap")}
    assert rows["job[task=consume]"]["significant"]
    assert rows["job[task=consume]"]["delta_percent"] < -50
    others = [rows["job[task=produce]"], rows["job[task=idle]"]]
    assert all(r["p_value"] > rows["job[task=consume]"]["p_value"] for r in others)
    assert all(
        abs(r["delta_percent"]) < abs(rows["job[task=consume]"]["delta_percent"]) / 5
        for r in others
    )
    assert all(r["n_fixed"] == r["n_random"] == 30 for r in rows.values())


@pytest.mark.slow
def test_no_trap_no_flag(tmp_path: Path) -> None:
    rows = _order(tmp_path, "order-free", alpha=0.01)
    # Nothing shows a meaningful order effect; millisecond-scale processes can still show a
    # tiny real one (the first trial after the reset), which must stay far below the trap's.
    assert not any(r["significant"] and abs(r["delta_percent"]) > 10 for r in rows)
