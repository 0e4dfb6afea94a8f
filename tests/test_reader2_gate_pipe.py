"""Second reader: ``benchlang history check`` (the CI gate) exits 0 when its standard output is
closed before it prints (``benchlang history check | head`` where head has left): the CLI maps
BrokenPipeError to exit 0, so a regression passes the gate (design.md: "A gate fails closed").
Found while reviewing cli.leave; it was so before b1f2a4b too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _history(tmp_path: Path) -> Path:
    """A history of 60 runs, one metric that steps up by 30% after the 40th (Otava's CSV)."""
    rng = np.random.default_rng(3)
    values = rng.normal(10, 0.2, 60) * np.where(np.arange(60) < 40, 1.0, 1.3)
    csv = tmp_path / "series.csv"
    csv.write_text(
        "time,commit,latency\n"
        + "".join(f"{1700000000 + i * 3600},c{i:03d},{v:.4f}\n" for i, v in enumerate(values))
    )
    history = tmp_path / "h.sqlite"
    done = _benchlang(["history", "import", str(csv), "--history", str(history)])
    assert done.returncode == 0, done.stderr
    return history


def _benchlang(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "benchlang", *argv],
        env=env,
        text=True,
        timeout=60,
        **({"capture_output": True} | kwargs),
    )


@pytest.mark.xfail(strict=True, reason="BrokenPipeError is exit 0: the gate passes a regression")
def test_the_gate_fails_on_a_regression_when_its_output_is_closed(tmp_path):
    history = _history(tmp_path)
    assert _benchlang(["history", "check", "--history", str(history)]).returncode == 1
    read, write = os.pipe()
    os.close(read)
    try:
        done = _benchlang(
            ["history", "check", "--history", str(history)],
            capture_output=False,
            stdout=write,
            stderr=subprocess.PIPE,
        )
    finally:
        os.close(write)
    assert done.returncode == 1
