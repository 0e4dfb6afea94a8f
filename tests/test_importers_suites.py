"""The suites people already have: pytest-benchmark, Google Benchmark,
criterion.rs and asv files through `benchlang import` and `benchlang analyze`.

pytest-benchmark's file is made here by the real tool; Google Benchmark's (1.7.1, Debian's
libbenchmark-dev) and asv's (0.6.4, `asv run --record-samples`) are real files in
tests/data/suites/; criterion's follow its saved format (``SavedSample``), see
tests/data/suites/README.md.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchlang.cli import main
from benchlang.run.importers.registry import detect_importer
from benchlang.run.store import Store

DATA = Path(__file__).parent / "data" / "suites"
GOOGLE = DATA / "google_benchmark_repetitions.json"
AGGREGATES = DATA / "google_benchmark_aggregates_only.json"
ASV = DATA / "asv" / "testbox" / "2b0e4558-existing-py.json"
CRITERION = DATA / "criterion"


def stored(store: Path):
    with Store(store) as opened:
        return opened.trial_table(opened.plan().plan_hash)


def imported(path: Path, tmp_path: Path, capsys, *more: str) -> tuple[Path, str]:
    store = tmp_path / "s.sqlite"
    assert main(["import", str(path), "--store", str(store), *more]) == 0
    return store, capsys.readouterr().out


def analyzed(store: Path, capsys) -> dict:
    assert main(["analyze", "--store", str(store), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def refusal(path: Path, tmp_path: Path, capsys, *more: str) -> str:
    assert main(["import", str(path), "--store", str(tmp_path / "r.sqlite"), *more]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and err[0].startswith("benchlang: error:") and len(err) <= 2, err
    return err[0]


@pytest.fixture(scope="module")
def pytest_benchmark_json(tmp_path_factory) -> Path:
    pytest.importorskip("pytest_benchmark")
    where = tmp_path_factory.mktemp("pb")
    (where / "test_tiny.py").write_text(
        "def test_sum(benchmark):\n"
        "    benchmark.pedantic(sum, args=(range(300),), rounds=7, iterations=4)\n"
        "def test_sorted(benchmark):\n"
        "    benchmark.pedantic(sorted, args=(list(range(900, 0, -1)),), rounds=6, iterations=3)\n"
    )
    out = where / "bench.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "pytest_benchmark.plugin",
            "-p",
            "no:cacheprovider",
            "test_tiny.py",
            f"--benchmark-json={out}",
        ],
        cwd=where,
        check=True,
        capture_output=True,
        timeout=120,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
            "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        },
    )  # fmt: skip (an xdist worker's PYTEST_XDIST_WORKER disables pytest-benchmark inside; the
    # other plugins installed here, not loaded, halve the start)
    return out


@pytest.mark.xdist_group("pytest-benchmark-file")  # the file made once (pytest -n)
def test_pytest_benchmark_rounds_are_kept_as_divided_by_the_tool(
    pytest_benchmark_json, tmp_path, capsys
):
    exported = json.loads(pytest_benchmark_json.read_text())["benchmarks"]
    assert detect_importer(pytest_benchmark_json).name == "pytest-benchmark"
    store, out = imported(pytest_benchmark_json, tmp_path, capsys)
    assert "imported 13 trials of 2 configurations in 2 rounds from pytest-benchmark" in out
    table = stored(store)
    by_label = {b["fullname"]: b["stats"] for b in exported}
    for label, stats in by_label.items():
        mine = table.label == label
        # stats.data is per iteration already: stored as is, not divided again
        assert table.measures["time"][mine] == pytest.approx(stats["data"], rel=1e-12)
        assert set(table.measures["iterations"][mine].tolist()) == {stats["iterations"]}
        assert table.position[mine].tolist() == list(range(len(stats["data"])))
    ranking = analyzed(store, capsys)["headline"][0]["rankings"][0]
    assert ranking["scheme"] == "blocks" and "drift" in ranking["assumption"]


@pytest.mark.xdist_group("pytest-benchmark-file")
def test_a_pytest_benchmark_summary_without_data_is_refused(
    pytest_benchmark_json, tmp_path, capsys
):
    doc = json.loads(pytest_benchmark_json.read_text())
    for bench in doc["benchmarks"]:
        del bench["stats"]["data"]
    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps(doc))
    line = refusal(saved, tmp_path, capsys)
    assert "stats has no 'data'" in line and "summary statistics only" in line


def test_google_benchmark_keeps_repetitions_and_drops_aggregates(tmp_path, capsys):
    rows = json.loads(GOOGLE.read_text())["benchmarks"]
    iterations = [r for r in rows if r["run_type"] == "iteration"]
    assert detect_importer(GOOGLE).name == "google-benchmark"
    store, out = imported(GOOGLE, tmp_path, capsys)
    assert f"imported {len(iterations)} trials of 2 configurations in 2 rounds" in out
    assert f"{len(rows) - len(iterations)} aggregate rows" in out
    table = stored(store)
    assert table.label.tolist() == [r["name"] for r in iterations]
    assert table.measures["time"] == pytest.approx([r["real_time"] * 1e-9 for r in iterations])
    assert table.measures["cpu_time"] == pytest.approx([r["cpu_time"] * 1e-9 for r in iterations])
    assert table.measures["iterations"].tolist() == [r["iterations"] for r in iterations]
    assert table.position.tolist() == [r["repetition_index"] for r in iterations]
    ranking = analyzed(store, capsys)["headline"][0]["rankings"][0]
    assert ranking["scheme"] == "blocks" and ranking["comparisons"]


def test_google_benchmark_aggregates_only_is_refused(tmp_path, capsys):
    line = refusal(AGGREGATES, tmp_path, capsys)
    assert "--benchmark_report_aggregates_only" in line and "refused" in line
    doc = json.loads(GOOGLE.read_text())  # one benchmark reported by its aggregates alone
    doc["benchmarks"] = [
        r for r in doc["benchmarks"] if r["run_type"] == "aggregate" or r["name"] != "BM_sum/512"
    ]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(doc))
    assert "no repetition of BM_sum/512" in refusal(partial, tmp_path, capsys)


def test_a_google_benchmark_error_is_a_failed_trial(tmp_path, capsys):
    doc = json.loads(GOOGLE.read_text())
    doc["benchmarks"][1].update(error_occurred=True, error_message="out of memory")
    broken = tmp_path / "gb.json"
    broken.write_text(json.dumps(doc))
    store, out = imported(broken, tmp_path, capsys, "--format", "google-benchmark")
    assert "1 repetitions reported an error" in out
    table = stored(store)
    assert (~table.ok).sum() == 1 and not table.ok[1]


@pytest.mark.skipif(
    shutil.which("g++") is None or not Path("/usr/include/benchmark/benchmark.h").exists(),
    reason="needs g++ and libbenchmark-dev",
)
def test_a_freshly_built_google_benchmark_imports(tmp_path, capsys):
    source = tmp_path / "bm.cc"
    source.write_text(
        "#include <benchmark/benchmark.h>\n"
        "static void BM_loop(benchmark::State& s) { for (auto _ : s) "
        "{ int x = 0; for (int i = 0; i < s.range(0); ++i) benchmark::DoNotOptimize(x += i); } }\n"
        "BENCHMARK(BM_loop)->Arg(10)->Arg(100);\nBENCHMARK_MAIN();\n"
    )
    binary, out = tmp_path / "bm", tmp_path / "gb.json"
    subprocess.run(["g++", "-O1", str(source), "-o", str(binary), "-lbenchmark", "-lpthread"],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    subprocess.run([str(binary), "--benchmark_repetitions=5", "--benchmark_min_time=0.002",
                    f"--benchmark_out={out}", "--benchmark_out_format=json"],
                   check=True, capture_output=True, timeout=120)  # fmt: skip
    store, shown = imported(out, tmp_path, capsys)
    assert "imported 10 trials of 2 configurations" in shown
    assert analyzed(store, capsys)["headline"][0]["rankings"][0]["comparisons"]


def test_criterion_samples_are_divided_by_their_iterations(tmp_path, capsys):
    assert detect_importer(CRITERION).name == "criterion"
    store, out = imported(CRITERION, tmp_path, capsys)
    assert "imported 20 trials of 2 configurations in 2 rounds from criterion" in out
    assert "linear mode (sort/std)" in out and "unequal size" in out
    table = stored(store)
    for label in ("sort/std", "sort/unstable"):
        saved = json.loads((CRITERION / label / "new" / "sample.json").read_text())
        mine = table.label == label
        expected = np.array(saved["times"]) / np.array(saved["iters"]) * 1e-9
        assert table.measures["time"][mine] == pytest.approx(expected)
        assert table.measures["iterations"][mine].tolist() == saved["iters"]
    ranking = analyzed(store, capsys)["headline"][0]["rankings"][0]
    first = ranking["comparisons"][0]
    assert first["lower"] < 1.2 < first["upper"], "the fixture's 1.2x (1200 ns vs 1000 ns)"


def test_one_criterion_sample_file_and_its_refusals(tmp_path, capsys):
    one = CRITERION / "sort" / "unstable" / "new" / "sample.json"
    store, out = imported(one, tmp_path, capsys)
    assert "imported 10 trials of 1 configuration" in out
    assert stored(store).label.tolist() == ["sort/unstable"] * 10
    saved = json.loads(one.read_text())
    saved["iters"] = saved["iters"][:-1]
    short = tmp_path / "sample.json"
    short.write_text(json.dumps(saved))
    assert "9 iters for 10 times: refused" in refusal(short, tmp_path, capsys)
    saved = json.loads(one.read_text())
    saved["iters"][3] = 0
    short.write_text(json.dumps(saved))
    assert "iters[3] is 0, not a positive whole number" in refusal(short, tmp_path, capsys)


def test_asv_samples_of_every_parameter_combination(tmp_path, capsys):
    results = json.loads(ASV.read_text())
    column = results["result_columns"].index("samples")
    assert detect_importer(ASV).name == "asv"
    store, out = imported(ASV, tmp_path, capsys)
    assert "of 6 configurations in 6 rounds from asv" in out
    assert "1 benchmarks or parameter combinations without samples" in out  # track_answer
    table = stored(store)
    sort = results["results"]["bench.Sizes.time_sort"]
    mine = table.label == "bench.Sizes.time_sort(1000, 'asc')"
    assert table.measures["time"][mine] == pytest.approx(sort[column][2])
    assert table.host[0] == "testbox"
    ranking = analyzed(store, capsys)["headline"][0]["rankings"][0]
    assert ranking["scheme"] == "blocks" and len(ranking["comparisons"]) >= 5


def test_asv_results_without_samples_are_refused(tmp_path, capsys):
    results = json.loads(ASV.read_text())
    column = results["result_columns"].index("samples")
    for row in results["results"].values():
        del row[column:]
    plain = tmp_path / "abc-env.json"
    plain.write_text(json.dumps(results))
    assert "--record-samples" in refusal(plain, tmp_path, capsys)


def test_the_broad_readers_still_recognise_their_own_files(tmp_path):
    hyperfine = tmp_path / "hf.json"
    hyperfine.write_text(json.dumps({"results": [{"command": "true", "times": [0.1]}]}))
    pyperf = tmp_path / "pp.json"
    pyperf.write_text(json.dumps({"version": "1.0", "benchmarks": [], "metadata": {}}))
    assert detect_importer(hyperfine).name == "hyperfine"
    assert detect_importer(pyperf).name == "pyperf"


def test_diff_compares_two_imports_of_a_suite(tmp_path, capsys):
    doc = json.loads(GOOGLE.read_text())
    for row in doc["benchmarks"]:
        if row["run_type"] == "iteration" and row["name"] == "BM_sum/512":
            row["real_time"] *= 1.3
    slower = tmp_path / "slower.json"
    slower.write_text(json.dumps(doc))
    for name, path in (("a", GOOGLE), ("b", slower)):
        assert (
            main(["import", str(path), "--store", str(tmp_path / f"{name}.sqlite"), "--name", "gb"])
            == 0
        )
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "a.sqlite"), str(tmp_path / "b.sqlite")]) == 0
    shown = capsys.readouterr().out
    assert "BM_sum/64" in shown and "+0.0%" in shown
    assert "BM_sum/512" in shown and "+30.0%" in shown


def _leaves(value, path=()):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _leaves(v, (*path, i))
    yield path


def _set(doc, path, new):
    if not path:
        return new
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return doc


@pytest.mark.parametrize(
    ("source", "form"),
    [
        (GOOGLE, "google-benchmark"),
        (ASV, "asv"),
        (CRITERION / "sort" / "std" / "new" / "sample.json", "criterion"),
    ],
    ids=["google-benchmark", "asv", "criterion"],
)
def test_mutated_files_are_refused_in_one_line_or_imported(source, form, tmp_path, capsys):
    """A seeded corpus of damaged files (a leaf made negative, NaN, a string, null, a list,
    an object, a boolean): each is refused in one line (exit 2) or imported, never a
    traceback, and nothing negative or non-finite is stored as a time."""
    rng = np.random.default_rng(52)
    original = json.loads(source.read_text())
    leaves = list(_leaves(original))
    swaps = [-1.5, float("nan"), "x", None, [], {}, True, 0]
    outcomes = {0: 0, 2: 0}
    for k in range(40):
        doc = json.loads(source.read_text())
        path = leaves[int(rng.integers(len(leaves)))]
        doc = _set(doc, path, swaps[int(rng.integers(len(swaps)))])
        damaged = tmp_path / f"m{k}" / source.name
        damaged.parent.mkdir()
        damaged.write_text(json.dumps(doc))
        store = tmp_path / f"m{k}.sqlite"
        code = main(["import", str(damaged), "--store", str(store), "--format", form])
        captured = capsys.readouterr()
        assert code in outcomes, (path, captured.err)
        outcomes[code] += 1
        if code == 2:
            assert len(captured.err.strip().splitlines()) <= 2 and "Traceback" not in captured.err
        else:
            time = stored(store).measures["time"]
            assert np.all(np.isnan(time) | ((time >= 0) & np.isfinite(time))), path
    assert outcomes[2] > 0 and outcomes[0] > 0, outcomes
