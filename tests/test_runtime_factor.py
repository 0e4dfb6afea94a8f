"""`runtime` as a factor: one spec runs the same protocol at several
runtimes (TriScale, Jacob et al. JSys 2021, Fig. 4: a 30 s and a 60 s run compared for the
metric's convergence), `{runtime}` expanding to each configuration's level in seconds, and
`analyze` compares the runtimes' convergence; the record gives each configuration its runtime."""

from __future__ import annotations

import json

import pytest

from benchlang.cli import main
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan

# Seeded series (a function of each trial's seed): a ramp over the first 50 samples, then flat.
# At runtime 1 (50 samples) the whole run is the ramp: the Theil-Sen test fails; at runtime 4
# (200 samples, the first 20% trimmed) the run is flat past sample 50 and converges.
FIG4 = '''benchlang 1
experiment fig4 {
  seed 4
  factor runtime in [1s, 4s]
  benchmark serve {
    run """python3 -c '
import os, random, sys
rng = random.Random(int(os.environ["BENCHLANG_SEED"]))
assert os.environ["BENCHLANG_RUNTIME"] == sys.argv[1]
with open("series.csv", "w") as out:
    out.write("i,latency\\n")
    for i in range(int(50 * float(sys.argv[1]))):
        out.write("%d,%.4f\\n" % (i, 100 + 20 * min(i, 50) / 50 + rng.gauss(0, 0.5)))
' {runtime}"""
    measure latency series from file "series.csv" column "latency"
    after "rm -f series.csv"
  }
  metric latency { measure percentile 50 trim 20% convergence { confidence 95% tolerance 5% } }
  kpi latency { percentile 50 confidence 75% }
  design { runs 4 }
}
'''


def _compile(body: str, design: str = "runs 2"):
    text = (
        f"benchlang 1\nexperiment e {{\n{body}\n"
        '  benchmark b { run "sleep {runtime}" }\n'
        f"  design {{ {design} }}\n}}\n"
    )
    return compile_source(decode("e.bench", text.encode()))


def test_runtime_levels_expand_in_seconds():
    e = _compile("  factor runtime in [30s, 1m, 1.5s]")
    commands = [c.command for c in compile_plan(e).configurations]
    assert commands == ["sleep 30", "sleep 60", "sleep 1.5"]
    assert e.design.runtime is None and e.factor("runtime").levels == (30, 60, 1.5)


def _errors(body: str, design: str = "runs 2") -> list[str]:
    with pytest.raises(SpecError) as info:
        _compile(body, design)
    return [d.message for d in info.value.diagnostics if d.severity == "error"]


def test_runtime_given_twice_or_not_as_durations_is_refused():
    assert _errors("  factor runtime in [30s, 60s]", "runs 2 runtime 30s") == [
        "runtime is given twice: in the design and as a factor"
    ]
    assert _errors('  factor runtime in ["fast", 60s]') == [
        "a runtime level must be a positive duration, got a string"
    ]
    assert _errors('  factor runtime in [30s]\n  setup "echo {runtime}"') == [
        "placeholder {runtime} cannot be used here: experiment-level commands run once, "
        "not per configuration"
    ]


def test_analyze_compares_the_convergence_of_each_runtime(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec, store = tmp_path / "fig4.bench", tmp_path / "fig4.sqlite"
    spec.write_text(FIG4)
    assert main(["run", str(spec), "--store", str(store), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["analyze", str(spec), "--store", str(store), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["runtimes"]
    assert [(r["runtime"], r["trials"], r["converged"]) for r in rows] == [(1.0, 4, 0), (4.0, 4, 4)]
    assert main(["analyze", str(spec), "--store", str(store)]) == 0
    text = capsys.readouterr().out
    assert "Convergence by runtime (TriScale §4.1, Fig. 4" in text
    assert "latency      1 s               1       4          0     0%" in text
    assert "latency      4 s               1       4          4   100%" in text
    assert main(["record", str(spec), "--store", str(store)]) == 0
    record = capsys.readouterr().out
    assert "| Parameter | serve[runtime=1] | serve[runtime=4] |" in record
    assert "| Runtime | 1s | 4s |" in record
