"""End to end: a real experiment with an ordering effect by construction is flagged by
`benchlang order`, and the same experiment without the effect is not (OrderSage, ATC 2023)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import cli_here

SPECS = Path(__file__).resolve().parents[1] / "specs"

# specs/order-trap.bench and specs/order-free.bench, with the measured time synthetic and
# seeded (docs/testing.md): the cache flag and the order are real (files, the executor's order),
# but a trial prints its base time (0.25 s for a cold `consume`, 0.01 s otherwise) x exp(0.1 z),
# z the normal quantile of the trial's seed, instead of sleeping and measuring the wall clock.
# The verdicts are then exact for these seeds, however busy the machine.
JOB_SH = """\
case "$1" in
  produce) touch order-trap.flag; base=0.01;;
  consume) if [ -f order-trap.flag ] || [ "$2" = free ]; then base=0.01; else base=0.25; fi
           rm -f order-trap.flag;;
  idle) rm -f order-trap.flag; base=0.01;;
esac
awk -v base=$base 'BEGIN {
  u = (ENVIRON["BENCHLANG_SEED"] % 2147483648 + 0.5) / 2147483648; p = u < 0.5 ? u : 1 - u
  t = sqrt(-2 * log(p))
  z = t - (2.515517 + 0.802853 * t + 0.010328 * t * t) / (1 + 1.432788 * t + 0.189269 * t * t + 0.001308 * t * t * t)
  if (u < 0.5) z = -z
  printf "t=%.12g\\n", base * exp(0.1 * z)
}'
"""


def _synthetic(name: str) -> str:
    """The shipped spec with its sleeping command replaced by the seeded one."""
    text = (SPECS / f"{name}.bench").read_text()
    kind = "trap" if name == "order-trap" else "free"
    lines = text.splitlines()
    runs = [i for i, line in enumerate(lines) if line.strip().startswith('run "sh -c')]
    measures = [i for i, line in enumerate(lines) if line.strip() == "measure time = wall_time"]
    assert len(runs) == len(measures) == 1, f"specs/{name}.bench changed shape: update this test"
    lines[runs[0]] = f'    run "sh job.sh {{task}} {kind}"'
    lines[measures[0]] = '    measure time from stdout regex "t=([0-9.e+-]+)"'
    return "\n".join(lines) + "\n"


def _order(tmp_path: Path, name: str, alpha: float = 0.05) -> list[dict]:
    spec = tmp_path / f"{name}.bench"
    spec.write_text(_synthetic(name))
    (tmp_path / "job.sh").write_text(JOB_SH)
    store = tmp_path / f"{name}.sqlite"
    code, out, err = cli_here(["run", spec, "--store", store, "--quiet"], cwd=tmp_path)
    assert code == 0, err
    assert "Order dependence: fixed vs random order" in out
    code, out, err = cli_here(["order", store, "--json", "--alpha", alpha])
    assert code == 0, err
    return json.loads(out)["configurations"]


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
    assert not any(r["significant"] for r in rows), rows
    assert all(abs(r["delta_percent"]) < 10 for r in rows), rows
