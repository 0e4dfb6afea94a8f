"""What the figures' tests share (tests/test_figures*.py, tests/test_report_honest.py): stores of
seeded synthetic values written for real plans (benchlang.testing.synthetic), the specs and value
functions more than one of them draws, the hourly load a ``profile`` reads, and the CLI called in
process."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.plan.plan import Plan
from benchlang.testing.synthetic import lognormal, synthetic_store

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
FIXED_VS_RANDOM = "runs 6 series 5 order fixed_vs_random"


def small_spec(
    name: str = "many",
    *,
    seed: int = 3,
    levels: Iterable[int] = range(1, 15),
    cpu: bool = False,
    kpis: bool = True,
    variability: bool = True,
    design: str = FIXED_VS_RANDOM,
    profile: bool = True,
) -> str:
    """A spec of one benchmark ``job`` over ``factor n``: ``time`` (and ``cpu``) in seconds,
    their median KPIs, the variability of ``time``, and a ``profile`` of ``load.csv``."""
    metrics = ["time", "cpu"] if cpu else ["time"]
    lines = [
        "benchlang 1",
        "",
        f"experiment {name} {{",
        f"  seed {seed}",
        f"  factor n in [{', '.join(map(str, levels))}]",
        "",
        "  benchmark job {",
        '    run "true {n}"',
        "    measure time = wall_time",
        *(["    measure cpu = cpu_time"] if cpu else []),
        "  }",
        "",
        *(f'  metric {m} {{ measure mean unit "s" better lower }}' for m in metrics),
        *(f"  kpi {m} {{ percentile 50 confidence 95% }}" for m in metrics if kpis),
        *(["  variability time { percentile 25 confidence 75% }"] if variability else []),
        "",
        f"  design {{ {design} }}",
        *(['  analysis { profile load from file "load.csv" period 1h }'] if profile else []),
        "}",
    ]
    return "\n".join(lines) + "\n"


def levels_of(plan: Plan, t: int) -> dict:
    """Trial ``t``'s factor levels."""
    return dict(plan.configurations[int(plan.trial_configuration[t])].levels)


def quickstart(plan: Plan, t: int) -> dict:
    """specs/quickstart.bench: its three tools 1.0, 1.2 and 1.4 x 50 ms."""
    return {"time": 0.05 * (1.0, 1.2, 1.4)[int(plan.trial_configuration[t])] * lognormal(plan, t)}


def latency(plan: Plan, t: int) -> dict:
    """specs/latency-series.bench: a raw series of 3,000 lognormal latencies per trial."""
    rng = np.random.default_rng(int(plan.trial_seed[t]))
    payload = levels_of(plan, t)["payload"]
    return {"latency": np.exp(rng.normal(np.log(5 + payload / 1000), 0.2, 3000))}


def datamill(plan: Plan, t: int) -> dict:
    """specs/datamill.bench: xz 3x gzip, +20% per level step, local:1 10% slower; 5% noise."""
    lv = levels_of(plan, t)
    base = {"gzip": 0.01, "xz": 0.03}[lv["tool"]] * (1 + 0.2 * lv["level"])
    host = 1.1 if plan.hosts[int(plan.trial_host[t])] == "local:1" else 1.0
    return {"time": base * host * lognormal(plan, t, 0.05), "size": 1000.0 * lv["level"]}


def write_load(root: Path) -> None:
    """Two weeks of hourly load with a daily period, as ``load.csv`` for ``profile``."""
    hours = np.arange(24 * 14)
    rng = np.random.default_rng(5)
    load = 10 + 3 * np.sin(2 * np.pi * hours / 24) + rng.normal(0, 0.5, hours.size)
    (root / "load.csv").write_text(
        "load\n" + "\n".join(f"{v:.4f}" for v in load) + "\n", encoding="utf-8"
    )


def make_store(
    root: Path,
    name: str,
    spec: str | Path,
    value: Callable[[Plan, int], object],
    seed: int | None = None,
) -> tuple[Path, Plan]:
    """``root/NAME.sqlite`` of ``spec`` (a path, or a spec's text written as NAME.bench)."""
    if isinstance(spec, str):
        path = root / f"{name}.bench"
        path.write_text(spec, encoding="utf-8")
        spec = path
    out = root / f"{name}.sqlite"
    return out, synthetic_store(spec, out, value, seed=seed)


def run_cli(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def figure_json(capsys, store_path: Path, name: str, *extra: str) -> dict:
    """``figure STORE NAME --json``, strict (a NaN fails the test)."""
    code, out, err = run_cli(capsys, "figure", store_path, name, "--json", *extra)
    assert code == 0, err
    return json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json"))
