"""Exports and host facts on a store written through the Store API with seeded values: the
versioned JSON document (per-trial rows with status, reason, exit status, stderr), per-trial
CSV, the Markdown table's relative column, the record's hosts and the differing-hosts warning,
and the headline's exact text."""

from __future__ import annotations

import csv
import io
import json

import attrs
import numpy as np
import pytest

from benchlang.report.analysis import analyze, build_record
from benchlang.report.data import load_data
from benchlang.report.export_files import export_text
from benchlang.report.exports import (
    SCHEMA,
    results_document,
    results_json,
    results_markdown,
    results_trials_csv,
    trial_rows,
)
from benchlang.report.headline import headline, headline_lines
from benchlang.report.hosts import host_warnings
from benchlang.report.results import render_results, results_rows
from benchlang.run.store import Store, TrialRecord

SPEC = """benchlang 1
experiment exports {
  seed 5
  factor tool in ["fast", "slow"]
  benchmark b {
    run "echo {tool}"
    measure v from stdout regex "v=([0-9.]+)"
  }
  metric v { measure mean unit "s" better lower }
  kpi v { percentile 50 confidence 95% }
  variability v { percentile 25 confidence 75% }
  design { runs 6 series 5 order random }
}
"""
SERIES, ROUNDS = 5, 6
FAILED = 7  # this trial failed: exit status 3, a stderr line


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("exports") / "e.sqlite"
    rng = np.random.default_rng(11)
    with Store(path, create=True) as store:
        store.add_plan(
            "sha256:" + "ab" * 32, "exports", "sha256:" + "cd" * 32, 5, "{}", "e.bench", SPEC
        )
        plan = store.plan().plan_hash
        store.record_host(plan, "h1", {"cpu_model": "EPYC", "kernel": "6.1", "cores": "2"})
        store.record_host(plan, "h2", {"cpu_model": "EPYC", "kernel": "6.8", "cores": "2"})
        trial = 0
        for s in range(SERIES):
            for r in range(ROUNDS):
                noise = rng.normal(0, 0.02)
                for position, (c, tool) in enumerate(((0, "fast"), (1, "slow"))):
                    value = (0.040 if c == 0 else 0.050) * float(
                        np.exp(noise + rng.normal(0, 0.01))
                    )
                    failed = trial == FAILED
                    store.record_trial(
                        plan,
                        TrialRecord(
                            trial=trial,
                            series=s,
                            round=s * ROUNDS + r,
                            position=position,
                            host="h1" if r % 2 == 0 else "h2",
                            configuration=c,
                            label=f"b[tool={tool}]",
                            benchmark="b",
                            levels={"tool": tool},
                            order_kind="random",
                            status="failed" if failed else "ok",
                            reason="exit status 3" if failed else None,
                            exit_status=3 if failed else 0,
                            timed_out=False,
                            started=0.0,
                            ended=value,
                            attempts=1,
                            stdout_tail=b"",
                            stderr_tail=b"warming up\nout of disk\n" if failed else b"",
                            measures={} if failed else {"v": round(value, 6), "wall_time": value},
                            series_values={},
                        ),
                    )
                    trial += 1
    return path


@pytest.fixture(scope="module")
def data(store_path):
    with Store(store_path) as store:
        return load_data(store)


def test_json_document_has_schema_and_per_trial_rows(data):
    doc = results_document(data, headlines=headline(data, analyze(data)))
    json.dumps(doc, allow_nan=False)  # strict JSON: no NaN anywhere
    assert doc["schema"] == SCHEMA == 1 and doc["kind"] == "benchlang.results"
    assert len(doc["trials"]) == SERIES * ROUNDS * 2
    failed = [t for t in doc["trials"] if t["status"] == "failed"]
    assert failed[0]["started"] <= failed[0]["ended"]
    assert failed == [
        {
            "trial": FAILED,
            "series": 0,
            "round": 3,
            "position": 1,
            "order": "random",
            "host": "h2",
            "configuration": "b[tool=slow]",
            "configuration_index": 1,
            "benchmark": "b",
            "started": failed[0]["started"],
            "ended": failed[0]["ended"],
            "levels": {"tool": "slow"},
            "phase": "measured",
            "status": "failed",
            "reason": "exit status 3",
            "measures": {"v": None, "wall_time": None},
            "metrics": {"v": None},
            "exit_status": 3,
            "stderr_last_line": "out of disk",
        }
    ]
    ok = doc["trials"][0]
    assert ok["status"] == "ok" and ok["reason"] is None and ok["measures"]["v"] > 0
    slow = doc["configurations"][1]
    assert slow["failures"] == 1 and slow["failed_trials"] == [
        {"trial": FAILED, "reason": "exit status 3"}
    ]
    assert doc["configurations"][0]["relative"] == 1.0
    assert doc["configurations"][1]["relative"] == pytest.approx(1.25, rel=0.03)
    assert doc["hosts"]["h2"]["kernel"] == "6.8"
    assert doc["host_warnings"] == [
        "warning: trials ran on hosts whose kernel differs: 6.1 on h1; 6.8 on h2"
    ]
    ranking = doc["headline"][0]["rankings"][0]
    assert ranking["levels"] == ["host", "series", "round"] and ranking["units"] == [2, 10, 30]
    assert ranking["descriptive_only"] is True  # two hosts: too few top-level clusters
    assert ranking["comparisons"][0]["lower"] is None


def test_legacy_json_rows_list_failed_trials(data):
    rows = results_rows(data)
    assert [r["failed_trials"] for r in rows] == [
        [],
        [{"trial": FAILED, "reason": "exit status 3"}],
    ]


def test_csv_has_one_row_per_trial(data):
    rows = list(csv.DictReader(io.StringIO(results_trials_csv(data))))
    assert len(rows) == SERIES * ROUNDS * 2
    assert list(rows[0])[:16] == [
        "trial",
        "series",
        "round",
        "position",
        "order",
        "host",
        "benchmark",
        "configuration",
        "configuration_index",
        "tool",
        "phase",
        "status",
        "reason",
        "exit_status",
        "started",
        "ended",
    ]
    bad = rows[FAILED]
    assert (bad["status"], bad["reason"], bad["exit_status"], bad["v_s"]) == (
        "failed",
        "exit status 3",
        "3",
        "",
    )
    assert float(rows[0]["metric:v_s"]) == pytest.approx(float(rows[0]["v_s"]))
    assert export_text(data, "csv") == results_trials_csv(data)


def test_markdown_has_a_relative_column(data):
    md = results_markdown(data).splitlines()
    assert (
        md[0]
        == "| Configuration | v median [ms] | Min [ms] | Max [ms] | Trials | Failures | Relative |"
    )
    assert md[2].startswith("| `b[tool=fast]` |") and md[2].endswith("| 30 | 0 | 1.00 |")
    assert md[3].startswith("| `b[tool=slow]` |") and md[3].endswith("| 29 | 1 | 1.26 |")


def test_hosts_in_results_and_record(data):
    out = io.StringIO()
    render_results(data, stream=out)
    text = out.getvalue()
    assert "host h1: EPYC, 2 cores, 6.1" in text and "host h2: EPYC, 2 cores, 6.8" in text
    assert "warning: trials ran on hosts whose kernel differs" in text
    record = build_record(data, analyze(data))
    md = record.to_markdown()
    assert "\nhost h2: EPYC, 2 cores, 6.8\n" in md and "whose kernel differs" in md
    assert "KPI: median of 5 series KPIs; variability score: upper - lower bound" in md
    kpi_row = next(line for line in md.splitlines() if line.startswith("| KPI |"))
    assert kpi_row.count(" ms") == 2
    assert record.metrics[0].kpi_summary == "median of 5 series"
    assert record.to_json()["hosts"][-1].startswith("warning:")


def test_same_hosts_give_no_warning(data):
    import attrs

    same = attrs.evolve(
        data, hosts={h: {"cpu_model": "EPYC", "kernel": "6.1"} for h in ("h1", "h2")}
    )
    assert host_warnings(same) == []


def one_host(data):
    import attrs

    table = attrs.evolve(data.table, host=np.full(len(data.table), "h1", dtype=object))
    return attrs.evolve(data, table=table)


def test_headline_text_is_exact(data):
    two = headline_lines(headline(data, analyze(data)))
    assert "  2. b[tool=slow]          50.44  fast is 1.26× faster than slow" in two
    assert (
        "  DESCRIPTIVE ONLY: 2 host units are too few clusters for an interval (the cluster-level t"
        " needs at" in two
    )
    assert "Ranking of tool by median v; ratios only, 30 rounds in 10 series in 2 hosts" in two
    single = one_host(data)
    lines = headline_lines(headline(single, analyze(single)))
    assert lines == HEADLINE, "\n".join(lines)
    assert max(map(len, lines)) <= 100


HEADLINE = [
    "Headline: v (ms), lower is better; KPI: median over series of the 95% upper bound on the median",
    "  configuration       n  bound ≤  series KPIs                     variability p25–p75",
    "  b[tool=fast]       30    40.71  40.71 40.63 40.92 40.44 40.81   [40.44, 40.92] 1.2%",
    "  b[tool=slow]       29    51.24  50.95 50.53 51.24 51.28 52.28   [50.53, 52.28] 3.4%",
    "  independence (run-level, 2 tests, Holm at 5% (first step 2.5%)): passed (trend over the run p =",
    "    0.2; autocorrelation within series p = 0.8)",
    "Ranking of tool by median v; jointly at 95% over 1 comparison, cluster-level t on 5 series (df 4);",
    "    each value the geometric mean of its series medians",
    "  1. b[tool=fast]          40.15",
    "  2. b[tool=slow]          50.26  fast is 1.25× faster than slow [1.24, 1.26]",
    "  Assumes the rounds, each running every configuration once (random order), are independent of each",
    "    other; measured on one host: the ratios hold for this host.",
    "  Check: the independence check of the run passed (run-level verdict above).",
    "Confidence: KPI 95% asked; with 5–6 runs per series the order statistic x(5)–x(6) gives 96.9%–98.4%.",
    "  Variability: 75% asked each; x(1), x(5) of 5 series: 76.3% each, jointly ≥ 52.5% (sum − 100%).",
]


def test_the_streamed_json_is_the_document_dumped(data):
    """write_results_json streams the trials from per-configuration templates; its text is
    exactly json.dumps of the document: failed trials with details, an ok trial with a
    reason, a label holding the template's placeholder, and no trials at all."""
    headlines = headline(data, analyze(data))
    reason = data.table.reason.copy()
    reason[0] = "retried"
    label = data.table.label.copy()
    label[label == label[1]] = 'b["@@benchlang 0@@"] ü'
    variants = [
        data,
        attrs.evolve(data, table=attrs.evolve(data.table, reason=reason, label=label)),
        attrs.evolve(data, table=data.table.select(np.zeros(len(data.table), dtype=bool))),
    ]
    for variant in variants:
        expected = json.dumps(results_document(variant, headlines=headlines), indent=2) + "\n"
        assert results_json(variant, headlines=headlines) == expected


def test_the_columnwise_csv_is_the_row_by_row_csv(data):
    """write_trials_csv writes column by column what writing trial_rows row by row gives,
    each column where the document's ``trial_columns`` says a JSON row holds it."""
    reason = data.table.reason.copy()
    reason[0] = "retried, twice"
    variant = attrs.evolve(data, table=attrs.evolve(data.table, reason=reason))
    for d in (data, variant):
        rows = trial_rows(d)
        columns = results_document(d)["trial_columns"]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([c["name"] for c in columns])
        cell = lambda v: "" if v is None else repr(v) if isinstance(v, float) else str(v)  # noqa: E731
        for r in rows:
            parts = [c["field"].partition(".") for c in columns]
            writer.writerow([cell(r[g][n] if n else r[g]) for g, _, n in parts])
        assert results_trials_csv(d) == out.getvalue()


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_exports")
