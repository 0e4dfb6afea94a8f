"""Every command on the example specs with Python warnings as errors, and every ``--json``
output through a strict parser (no NaN or Infinity; benchlang/jsonout.py, docs/exports.md).

The runs are the quick examples of specs/, made smaller (``QUICK``),
a DataMill-style spec whose ``host`` term is determined by ``cpu`` and a run with too few
trials for its KPIs. They run first, then every other command reads their stores, all in one
interpreter under ``python -W error`` with ``PYTHONWARNINGS=error`` (``DRIVER``:
``benchlang.cli.main`` per call, its output captured), which pays the imports once rather than
once per run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchlang.cli import COMMANDS
from benchlang.jsonout import loads
from benchlang.testing.synthetic import synthetic_store
from tests.test_figures_perflab import AA_SPEC, aa_value

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.timeout(900),  # the module's runs, on a busy 2-core machine
    pytest.mark.xdist_group("test_strict_outputs"),  # its fixtures built once (pytest -n)
]
QUICK = {
    "quickstart": (("33554432", "1048576"),),
    "ab-layout": (
        ("requests 20 repetitions 3", "requests 6 repetitions 2"),
        ("i < n * work", "i < n * work / 50"),
        ("replicates 4000", "replicates 400"),
    ),
    "order-free": (("runs 30", "runs 10"),),
    "hooks": (),
}
"""The examples run here, with replacements that make them cheaper: output strictness, not
measuring, is the point (the quickstart on a 1 MiB file, a 6-request layout of 2 repetitions
instead of 20 of 3 with a 50x shorter loop and 400 bootstrap replicates instead of 4000, 10
runs per order instead of 30; the other examples differ only in their commands: plan and
check cover them)."""

FACTS = {
    "local:0": {"cpu_model": "Xeon E5", "memory": "2097152 kB"},
    "local:1": {"cpu_model": "Cortex-A72", "memory": "4194304 kB"},
    "local:2": {"cpu_model": "EPYC", "memory": "8388608 kB"},
}
DATAMILL = """benchlang 1
experiment datamill {
  seed 3
  hosts local { slots 3 facts from file "facts.json" }
  factor cpu from hosts "cpu_model"
  factor n in [1, 2]
  benchmark b { run "echo {n}"
    measure t = wall_time }
  metric t { measure mean unit "s" }
  kpi t { percentile 50 confidence 95% }
  design { runs 5 }
  analysis { anova t ~ cpu * n + host }
}
"""
FEW = """benchlang 1
experiment few {
  seed 5
  factor k in [1, 2]
  benchmark b { run "test {k} = 2 || test $((BENCHLANG_TRIAL % 3)) -ne 0"
    measure t = wall_time }
  metric t { measure mean unit "s" }
  kpi t { percentile 50 confidence 95% }
  variability t { percentile 25 confidence 75% }
  design { runs 5 series 5 }
}
"""
"""Every third trial of k=1 fails: its series have too few trials for a KPI, so its KPIs,
variability score and headline numbers are undefined."""


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONWARNINGS": "error",
        "PYTHONDONTWRITEBYTECODE": "1",
        "COLUMNS": "200",
    }


def ok(result: tuple, name: str) -> str:
    """The output of a call that succeeded (``replicate`` exits 3 when it cannot compare
    three trials per configuration with a published score) and wrote no warning."""
    status, out, err = result
    assert status in ((0, 3) if name.startswith("replicate") else (0,)), f"{name}: {status}\n{err}"
    assert "Warning" not in err and "Traceback" not in err, f"{name}: {err}"
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    """The quick examples, the DataMill spec and the inputs of the other commands (``RUNS``
    makes the stores)."""
    root = tmp_path_factory.mktemp("strict")
    for name, cheaper in QUICK.items():
        text = (ROOT / "specs" / f"{name}.bench").read_text()
        for before, after in cheaper:
            assert before in text, f"{name}.bench no longer has {before!r}"
            text = text.replace(before, after)
        (root / f"{name}.bench").write_text(text)
    (root / "facts.json").write_text(json.dumps(FACTS))
    (root / "datamill.bench").write_text(DATAMILL)
    (root / "few.bench").write_text(FEW)
    rng = np.random.default_rng(35)
    (root / "values.csv").write_text(
        "x,series\n"
        + "".join(f"{v:.6f},{i // 6}\n" for i, v in enumerate(rng.lognormal(0, 0.1, 30)))
    )
    (root / "stream.csv").write_text(
        "ms\n" + "".join(f"{v:.5f}\n" for v in rng.lognormal(0, 0.2, 1000))
    )
    (root / "few.csv").write_text("x\n1\n2\n3\n")  # too few for a bound: nulls with reasons
    (root / "aa.bench").write_text(AA_SPEC)  # two seeded A/A stores for aa-check
    for seed in (1, 2):
        synthetic_store(root / "aa.bench", root / f"aa{seed}.sqlite", aa_value, seed=seed)
    (root / "condition.csv").write_text(
        "v\n" + "".join(f"{np.sin(i / 4) + rng.normal(0, 0.1):.5f}\n" for i in range(96))
    )
    (root / "hyperfine.json").write_text(
        json.dumps(
            {
                "results": [
                    {"command": c, "times": rng.lognormal(m, 0.05, 10).tolist()}
                    for c, m in (("gzip -1", -3.0), ("gzip -9", -2.5))
                ]
            }
        )
    )
    return root


RUNS: dict[str, list[str]] = {
    f"run {n}": ["run", f"{n}.bench", "--store", f"{n}.sqlite", "-q", "-i"]
    for n in (*QUICK, "datamill", "few")
}
"""The runs whose stores the other calls read: first."""
CALLS: dict[str, list[str]] = {
    "check": ["check", *(f"{n}.bench" for n in QUICK), "datamill.bench", "few.bench"],
    "fmt --check": ["fmt", "--check", *(f"{n}.bench" for n in QUICK)],
    "plan": ["plan", "quickstart.bench"],
    "plan --json": ["plan", "ab-layout.bench", "--json"],
    "results": ["results", "quickstart.sqlite"],
    "results --json": ["results", "quickstart.sqlite", "--json"],
    "results --format json": ["results", "quickstart.sqlite", "--format", "json"],
    "results --format csv": ["results", "ab-layout.sqlite", "--format", "csv"],
    "results --format markdown": ["results", "hooks.sqlite", "--format", "markdown"],
    "results --format parquet": [
        *("results", "quickstart.sqlite", "--format", "parquet", "--output", "q.parquet"),
    ],
    "analyze": ["analyze", "quickstart.bench", "--store", "quickstart.sqlite"],
    "analyze --json": ["analyze", "quickstart.bench", "--store", "quickstart.sqlite", "--json"],
    "analyze ab --json": ["analyze", "ab-layout.bench", "--store", "ab-layout.sqlite", "--json"],
    "analyze ab": ["analyze", "ab-layout.bench", "--store", "ab-layout.sqlite"],
    "analyze anova": ["analyze", "datamill.bench", "--store", "datamill.sqlite"],
    "analyze anova --json": ["analyze", "datamill.bench", "--store", "datamill.sqlite", "--json"],
    "analyze order": ["analyze", "order-free.bench", "--store", "order-free.sqlite"],
    "analyze --data --json": ["analyze", "--data", "values.csv", "--series", "series", "--json"],
    "analyze --data few --json": ["analyze", "--data", "few.csv", "--json"],
    "analyze --data few": ["analyze", "--data", "few.csv"],
    "analyze few --json": ["analyze", "few.bench", "--store", "few.sqlite", "--json"],
    "results few --json": ["results", "few.sqlite", "--json"],
    "record": ["record", "--store", "quickstart.sqlite"],
    "record --format json": ["record", "--store", "quickstart.sqlite", "--format", "json"],
    "record anova --format json": ["record", "--store", "datamill.sqlite", "--format", "json"],
    "record few --format json": ["record", "--store", "few.sqlite", "--format", "json"],
    "record --format methods": ["record", "--store", "ab-layout.sqlite", "--format", "methods"],
    "report": ["report", "quickstart.sqlite", "-o", "quickstart.html"],
    "report ab": ["report", "ab-layout.sqlite", "-o", "ab-layout.html"],
    "report anova": ["report", "datamill.sqlite", "-o", "datamill.html"],
    "order": ["order", "order-free.sqlite"],
    "order --json": ["order", "order-free.sqlite", "--json"],
    "figure --list --json": ["figure", "order-free.sqlite", "--list", "--json"],
    "figure --json": ["figure", "quickstart.sqlite", "cdf-overlay", "--json"],
    "figure": ["figure", "order-free.sqlite", "order-ci", "-o", "order-ci.pdf", "--style", "paper"],
    "size --json": ["size", "--percentile", "95", "--confidence", "95", "--json"],
    "profile --json": ["profile", "condition.csv", "--period", "15m", "--json"],
    "stopping-eval --json": ["stopping-eval", "stream.csv", "--json"],
    "composite --json": [
        *("composite", "datamill.sqlite", "--by", "n", "--over", "cpu", "--cluster", "round"),
        *("--replicates", "500", "--json"),
    ],
    "simulate-aa --json": [
        *("simulate-aa", "--hosts", "2", "--requests", "8", "--repetitions", "2"),
        *("--components", "request=1,host=0.1,host_batch=0.1,residual=0.5"),
        *("--experiments", "20", "--replicates", "50", "--json"),
    ],
    "advise --json": [
        *("advise", "ab-layout.bench", "--pilot", "ab-layout.sqlite"),
        *("--budget", "1000", "--json"),
    ],
    "advise --sweep --json": [
        *("advise", "ab-layout.bench", "--pilot", "ab-layout.sqlite", "--sweep", "--json"),
    ],
    "figure aa-estimates --json": ["figure", "ab-layout.sqlite", "aa-estimates", "--json"],
    "aa-check --json": ["aa-check", "aa1.sqlite", "aa2.sqlite", "--json"],
    "plugins --json": ["plugins", "--json"],
    "system show": ["system", "show"],
    "system show --json": ["system", "show", "--json"],
    "plugins --describe --json": ["plugins", "--describe", "anova", "--json"],
    "diff": ["diff", "hooks.sqlite", "hooks.sqlite"],
    "diff --format json": ["diff", "hooks.sqlite", "hooks.sqlite", "--format", "json"],
    "hosts list --json": ["hosts", "list", "quickstart.sqlite", "--json"],
    "bundle": ["bundle", "few.sqlite", "-o", "few.tar.gz"],
    "import": ["import", "hyperfine.json", "--store", "hyperfine.sqlite"],
    "compare": ["compare", "-q", "--runs", "5", "--export-json", "compare.json", "true", "echo x"],
}
LATER: dict[str, list[str]] = {
    "replicate --analyze-only": ["replicate", "few.tar.gz", "--analyze-only"],
    "analyze import --json": ["analyze", "--store", "hyperfine.sqlite", "--json"],
    "analyze import": ["analyze", "--store", "hyperfine.sqlite"],
    "history add": ["history", "add", "hooks.sqlite", "--history", "h.sqlite", "--commit", "c1"],
    "history list --json": ["history", "list", "--history", "h.sqlite", "--json"],
    "history changes --json": ["history", "changes", "--history", "h.sqlite", "--json"],
    "history check --json": ["history", "check", "--history", "h.sqlite", "--json"],
    "history report": ["history", "report", "--history", "h.sqlite", "-o", "history.html"],
    "store migrate": ["store", "migrate", "hooks.sqlite"],  # old schemas: test_store_migrate.py
    "bisect --help": ["bisect", "--help"],  # a real bisect needs a repository: test_bisect.py
    "lsp --help": ["lsp", "--help"],  # a session needs a client: test_lsp.py
}
"""Calls that read what a call of CALLS wrote."""


DRIVER = """
import contextlib, io, json, sys, traceback
from benchlang.cli import main
calls = json.load(open(sys.argv[1]))
done = {}
for name, args in calls.items():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(args)
        except SystemExit as stop:
            status = stop.code if isinstance(stop.code, int) else 2
        except BaseException:
            traceback.print_exc()
            status = 99
    done[name] = [status, out.getvalue(), err.getvalue()]
json.dump(done, open(sys.argv[2], "w"))
"""
"""Runs each call of a JSON file in this interpreter, writing (status, stdout, stderr) by name."""


@pytest.fixture(scope="module")
def outputs(work) -> dict[str, tuple]:
    """Every call of RUNS, then CALLS, then LATER, in one interpreter under ``-W error``."""
    (work / "calls.json").write_text(json.dumps(RUNS | CALLS | LATER))
    driver = subprocess.run(
        [sys.executable, "-W", "error", "-c", DRIVER, "calls.json", "outputs.json"],
        cwd=work,
        env=_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert driver.returncode == 0, driver.stderr
    return {
        name: tuple(done) for name, done in json.loads((work / "outputs.json").read_text()).items()
    }


def test_every_command_is_called():
    called = {args[0] for args in (*RUNS.values(), *CALLS.values(), *LATER.values())}
    assert called == set(COMMANDS)


@pytest.mark.parametrize("name", [*RUNS, *CALLS, *LATER])
def test_no_warning_reaches_the_user(outputs, name):
    ok(outputs[name], name)


@pytest.mark.parametrize("name", [n for n in (*CALLS, *LATER) if "json" in n])
def test_every_json_output_is_strict_and_versioned(outputs, name):
    document = loads(ok(outputs[name], name))
    assert isinstance(document, dict)
    if name == "plan --json":
        assert document["benchlang_plan"] >= 1  # the plan's own version (docs/cli.md)
        return
    assert document["schema"] >= 1
    command = (CALLS | LATER)[name][0]
    expected = "plugins.describe" if "--describe" in name else command
    expected = "advise-sweep" if "--sweep" in name else expected
    assert document["kind"] == f"benchlang.{expected}"
    assert list(document)[:2] == ["schema", "kind"]


def test_results_json_is_the_format_json_document(outputs):
    assert outputs["results --json"][1] == outputs["results --format json"][1]
    document = loads(outputs["results --json"][1])
    assert document["kind"] == "benchlang.results" and len(document["trials"]) == 75


def test_undefined_numbers_are_null_with_a_reason(outputs):
    """Three values bound no median at 95%: the KPI and its coverage are null, and why."""
    (kpi,) = loads(outputs["analyze --data few --json"][1])["kpis"]
    (series,) = kpi["series"]
    assert series["value"] is None and series["achieved_confidence"] is None
    assert "too few" in series["null_reasons"]["value"]
    independence = series["independence"]
    assert independence["trend_p"] is None and "too few" in independence["null_reasons"]["trend_p"]


def test_a_configuration_without_kpis_has_null_numbers_with_reasons(outputs):
    document = loads(outputs["analyze few --json"][1])
    (headline,) = document["headline"]
    few = next(c for c in headline["configurations"] if c["label"] == "b[k=1]")
    assert few["kpi"] is None and few["series_kpis"] == [None] * 5
    assert few["null_reasons"]["kpi"].startswith("no KPI: too few converged trials")
    kpis = next(k for k in document["kpis"] if k["configuration"] == "b[k=1]")
    assert kpis["descriptive_only"] and kpis["variability"]["lower"] is None
    assert "too few series" in kpis["variability"]["null_reasons"]["lower"]


def test_strict_parser_refuses_nan():
    for text in ('{"a": NaN}', '{"a": Infinity}', "[-Infinity]"):
        with pytest.raises(ValueError, match="not strict JSON"):
            loads(text)


def test_aliased_anova_term_is_named_not_warned(outputs, work):
    """host is determined by cpu (one host per CPU model): dropped by name, no row of its own."""
    text = outputs["analyze anova"][1]
    assert "note: t: host is determined by cpu: its term is dropped" in text
    page = (work / "datamill.html").read_text()
    assert "<p class='note'>host is determined by cpu: its term is dropped</p>" in page
    (comparison,) = loads(outputs["analyze anova --json"][1])["comparisons"]
    table = comparison["mixed_effects"]
    terms = [row["term"] for row in table["rows"]]
    assert terms == ["cpu", "n", "cpu:n", "Residual"]
    assert table["dropped"] == ["host is determined by cpu: its term is dropped"]
    sums = [row["sum_sq"] for row in table["rows"]]
    assert len(set(sums)) == len(sums)


def test_an_unexplained_nan_stops_the_writer_at_its_place():
    """A regression (a to_dict that leaves a nan) fails loudly, saying where, for people."""
    from benchlang.errors import UserError
    from benchlang.jsonout import document, dumps

    with pytest.raises(UserError, match=r"undefined number \(nan\) at \$\.kpis\[1\]\.value"):
        dumps(document("analyze", 1, {"kpis": [{"value": 1.0}, {"value": float("nan")}]}))
    text = dumps(document("size", 1, {"n": np.int64(59), "share": np.float64(0.25)}))
    assert loads(text) == {"schema": 1, "kind": "benchlang.size", "n": 59, "share": 0.25}
    with pytest.raises(ValueError, match="schema or kind"):
        document("size", 1, {"kind": "mine"})


def test_undefined_names_every_nulled_field():
    from benchlang.jsonout import undefined

    fields = {"value": float("nan"), "n": 3, "kpis": [1.0, float("inf")], "p": 0.5}
    out = undefined(fields, {"value": "too few values", "*": "no test"})
    assert out == {
        "value": None,
        "n": 3,
        "kpis": [1.0, None],
        "p": 0.5,
        "null_reasons": {"value": "too few values", "kpis": "no test"},
    }
    assert "null_reasons" not in undefined({"p": 0.5}, {})


def test_an_order_test_not_made_is_null_with_its_reason():
    """One random-order trial of b: b is not compared (OrderSage needs two per side)."""
    from benchlang.jsonout import dumps
    from benchlang.stats.order_dependence import order_dependence

    rng = np.random.default_rng(3)
    configuration = ["a"] * 12 + ["b"] * 7
    order = (["fixed"] * 6 + ["random"] * 6) + (["fixed"] * 6 + ["random"])
    result = order_dependence(rng.normal(10, 1, 19), configuration, order)
    b = loads(dumps(result.to_dict()))["configurations"][1]
    assert b["configuration"] == "b" and not b["compared"]
    assert b["p_value"] is None
    assert b["null_reasons"]["p_value"] == "not compared: 6 fixed-order and 1 random-order trials"


def test_warmup_advice_on_constant_values_warns_nothing():
    """A layout whose metric never changes (an output size): no autocorrelation to measure,
    and no numpy 'invalid value' warning (it was a 0/0)."""
    import warnings

    from benchlang.stats.ab.warmup import suggest_warmup

    request = np.tile(np.repeat(np.arange(5), 2), 4)
    batch, position = np.repeat(np.arange(4), 10), np.tile(np.arange(10), 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = suggest_warmup(np.full(40, 7.0), request, batch, position)
    assert (found.warmup, found.cooldown, found.autocorrelation) == (0, 0, 0.0)
