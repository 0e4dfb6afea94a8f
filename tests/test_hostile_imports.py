"""Hostile and broken imports: every reader of `benchlang import`
(hyperfine, pyperf, CSV) on a seeded corpus of mutated files (a wrong JSON type in any field,
deep nesting, truncation, flipped bytes, a BOM, negative, infinite and NaN values, exit-code
and memory lists of the wrong length) and on hypothesis-made JSON documents and CSV files. No
input may end in an exception: each is refused with exit 2 and one error line, or imported
whole (as many trials stored as the file holds values). The suite imports 40 corpus files of
each reader and 60 hypothesis documents of each kind; ``BENCHLANG_FUZZ=full``
(tests/fuzz_budget.py) 300 and 1,000. benchmarks/hostile_imports.py prints the corpus' counts
against any checkout."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlang.cli import main
from tests.fuzz_budget import cases

WRONG = [None, True, False, -1, -0.5, 0, 1.5, "", "x", "1", [], [1], [["x"]], {}, {"a": 1},
         10**30, math.inf, -math.inf, math.nan]  # fmt: skip
DEEP = 200_000


def hyperfine_doc(rng: random.Random) -> dict:
    results = []
    for c in range(rng.randint(1, 3)):
        n = rng.randint(1, 6)
        results.append(
            {
                "command": f"sleep 0.{c}",
                "mean": 0.1,
                "times": [round(rng.uniform(0.001, 0.2), 6) for _ in range(n)],
                "exit_codes": [rng.choice([0, 0, 0, 1]) for _ in range(n)],
                "memory_usage_byte": [rng.randint(1 << 20, 1 << 24) for _ in range(n)],
            }
        )
    return {"results": results}


def pyperf_doc(rng: random.Random) -> dict:
    benchmarks = []
    for b in range(rng.randint(1, 3)):
        runs = [{"metadata": {"date": "2026-01-01"}, "warmups": [[1, 0.01]]}]
        runs += [
            {"values": [round(rng.uniform(0.001, 0.01), 6) for _ in range(rng.randint(1, 4))]}
            for _ in range(rng.randint(1, 4))
        ]
        benchmarks.append({"metadata": {"name": f"bench{b}", "unit": "second"}, "runs": runs})
    metadata = {"cpu_count": 2, "hostname": "h", "cpu_model_name": "CPU", "aslr": "Full"}
    return {"version": "1.0", "metadata": metadata, "benchmarks": benchmarks}


def csv_rows(rng: random.Random) -> list[list[str]]:
    rows = [["test", "order", "run_seq", "position", "value"]]
    for r in range(rng.randint(1, 3)):
        for p, label in enumerate(rng.sample(["a", "b", "c"], 2)):
            rows.append([label, "random", str(r), str(p), f"{rng.uniform(0.5, 2):.4f}"])
    return rows


def _mutate_json(value, rng: random.Random):
    """``value`` with one field or element replaced by a wrong type, or deleted."""
    if not isinstance(value, (dict, list)) or not value or rng.random() < 0.1:
        return rng.choice(WRONG)
    key = rng.choice(list(value)) if isinstance(value, dict) else rng.randrange(len(value))
    copy = dict(value) if isinstance(value, dict) else list(value)
    if rng.random() < 0.2:
        del copy[key]
    else:
        copy[key] = _mutate_json(copy[key], rng)
    return copy


def _bytes_of(document, rng: random.Random) -> bytes:
    text = json.dumps(document)  # NaN and Infinity as Python writes them (not JSON)
    kind = rng.random()
    if kind < 0.05:
        return text[: rng.randrange(len(text))].encode()
    if kind < 0.1:
        data = bytearray(text.encode())
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    if kind < 0.15:
        return b"\xef\xbb\xbf" + text.encode()
    return text.encode()


def hostile_json(make, rng: random.Random) -> bytes:
    """A mutated export: a wrong type, a list of the wrong length, deep nesting, or bytes."""
    document = make(rng)
    kind = rng.random()
    if kind < 0.06:
        depth = rng.choice([100, 1_000, DEEP])
        key = "results" if "results" in document else "benchmarks"
        return (f'{{"{key}": ' + "[" * depth + "]" * depth + "}").encode()
    if kind < 0.2:  # a list one shorter or longer than the run's times
        for entry in document.get("results", []):
            field = rng.choice(["exit_codes", "memory_usage_byte"])
            entry[field] = entry[field][:-1] if rng.random() < 0.5 else [*entry[field], 0]
        return _bytes_of(document, rng)
    return _bytes_of(_mutate_json(document, rng), rng)


def hostile_csv(rng: random.Random) -> bytes:
    rows = csv_rows(rng)
    kind = rng.random()
    if kind < 0.4:
        row = rng.randrange(len(rows))
        rows[row][rng.randrange(len(rows[row]))] = rng.choice(
            ["", "nan", "inf", "-inf", "-1", "-0.001", "1e999", "x", '"', "\x00", "1,2"]
        )
    elif kind < 0.5:
        del rows[rng.randrange(len(rows))][rng.randrange(5)]
    text = "\n".join(",".join(r) for r in rows) + "\n"
    data = text.encode()
    if rng.random() < 0.2:
        data = b"\xef\xbb\xbf" + data
    if rng.random() < 0.1:
        data = data[: rng.randrange(len(data) + 1)]
    if rng.random() < 0.05:
        data = rng.randbytes(rng.randrange(200))
    return data


def corpus(seed: int, count: int) -> list[tuple[str, str, bytes]]:
    """(reader, file suffix, content), ``count`` of each reader."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        out.append(("hyperfine", ".json", hostile_json(hyperfine_doc, rng)))
        out.append(("pyperf", ".json", hostile_json(pyperf_doc, rng)))
        out.append(("csv", ".csv", hostile_csv(rng)))
    return out


DRIVER = r"""
import contextlib, io, json, sys, traceback
from benchlang.cli import main
from tests.fuzz_budget import cases
out = []
for line in sys.stdin:
    path, tool, store = json.loads(line)
    stdout, stderr = io.StringIO(), io.StringIO()
    kind = None
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            status = main(["import", path, "--format", tool, "--store", store])
        except SystemExit as exit:
            status = exit.code
        except BaseException as err:
            status, kind = None, type(err).__name__
    out.append([path, tool, store, status, kind, stderr.getvalue()])
print(json.dumps(out))
"""


def run_corpus(inputs, workdir: Path, env: dict | None = None) -> list[list]:
    """Import each input in one child process (a RecursionError may not be caught in this
    one's stack); one row per input: path, reader, store, status, exception type, stderr."""
    lines = []
    for i, (tool, suffix, data) in enumerate(inputs):
        path = workdir / f"in{i}{suffix}"
        path.write_bytes(data)
        lines.append(json.dumps([str(path), tool, str(workdir / f"s{i}.sqlite")]))
    done = subprocess.run(
        [sys.executable, "-c", DRIVER],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=workdir,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def stored_trials(store: str) -> int:
    with contextlib.closing(sqlite3.connect(store)) as db:
        return db.execute("SELECT count(*) FROM trials").fetchone()[0]


def expected_trials(path: str, tool: str) -> int | None:
    """How many values a file that imported holds, read independently of the importers."""
    raw = Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf")
    if tool == "csv":
        rows = [r for r in csv.reader(io.StringIO(raw.decode())) if any(c.strip() for c in r)]
        return len(rows) - 1
    document = json.loads(raw)
    if tool == "hyperfine":
        return sum(len(r["times"]) for r in document["results"])
    runs = [run for b in document["benchmarks"] for run in b.get("runs") or []]
    return sum(len(run.get("values") or []) for run in runs)


def check_outcome(row: list) -> str:
    path, tool, store, status, kind, err = row
    assert kind is None, f"{tool} {path}: {kind}"
    errors = [line for line in err.splitlines() if line.startswith("benchlang: error:")]
    if status == 2:
        assert len(errors) == 1 and "Traceback" not in err, err
        assert len(err.splitlines()) <= 2, err
        return "refused"
    assert status == 0, (status, err)
    assert stored_trials(store) == expected_trials(path, tool), path
    return "imported"


def test_the_hostile_import_corpus_is_refused_in_one_line_or_imported_whole(tmp_path):
    count = cases(40, 300)
    rows = run_corpus(corpus(seed=49, count=count), tmp_path)
    outcomes = [check_outcome(row) for row in rows]
    assert len(outcomes) == 3 * count
    for tool in ("hyperfine", "pyperf", "csv"):
        seen = {o for row, o in zip(rows, outcomes, strict=True) if row[1] == tool}
        assert seen == {"refused", "imported"}, (tool, seen)


def _import(path: Path, tmp_path: Path, capsys) -> tuple[int, str]:
    status = main(["import", str(path), "--store", str(tmp_path / f"{path.stem}.sqlite")])
    return status, capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ({"results": [{"command": "a", "times": [0.1], "exit_codes": ["x"]}]},
         'results[0].exit_codes[0] is "x", not a whole number'),
        ({"results": [{"command": "a", "times": [0.1, 0.2], "exit_codes": [0]}]},
         "results[0].exit_codes has 1 entries for 2 runs: refused"),
        ({"results": [{"command": "a", "times": [0.1, -0.2]}]},
         "results[0].times[1] is -0.2, a negative measurement: refused"),
        ({"results": [{"command": "a", "times": [0.1, math.inf]}]},
         "results[0].times[1] is inf, not a finite number"),
        ({"results": [{"command": "a", "times": "0.1"}]},
         'results[0].times is "0.1", not a list of numbers'),
        ({"results": [{"command": "a", "times": [0.1], "memory_usage_byte": [1, 2]}]},
         "memory_usage_byte has 2 entries for 1 runs"),
        ({"benchmarks": "x"}, 'benchmarks is "x", not a list'),
        ({"benchmarks": [{"runs": [{"values": ["0.1"]}]}]},
         'benchmarks[0].runs[0].values[0] is "0.1", not a number'),
        ({"benchmarks": [{"runs": [{"values": [0.1, -1.0]}]}]},
         "benchmarks[0].runs[0].values[1] is -1, a negative measurement"),
        ({"benchmarks": [{"runs": [{"values": [math.nan]}]}]},
         "benchmarks[0].runs[0].values[0] is nan, not a finite number"),
        ({"benchmarks": [{"runs": "x"}]}, 'benchmarks[0].runs is "x", not a list'),
    ],
)  # fmt: skip
def test_a_value_that_cannot_be_is_refused_naming_its_field_and_index(
    content, said, tmp_path, capsys
):
    path = tmp_path / "x.json"
    path.write_text(json.dumps(content))
    status, err = _import(path, tmp_path, capsys)
    assert status == 2 and said in err, err
    assert err.startswith(f"benchlang: error: {path}: ") and "Traceback" not in err


def test_deep_json_is_one_line(tmp_path, capsys):
    for key in ("results", "benchmarks"):
        path = tmp_path / f"{key}.json"
        path.write_text(f'{{"{key}": ' + "[" * DEEP + "]" * DEEP + "}")
        status, err = _import(path, tmp_path, capsys)
        assert status == 2 and "nested more than 64 levels" in err, err
        assert len([x for x in err.splitlines() if x.startswith("benchlang: error")]) == 1


def test_a_csv_with_a_bom_imports_and_a_negative_or_infinite_value_is_refused(tmp_path, capsys):
    good = tmp_path / "bom.csv"
    good.write_bytes(b"\xef\xbb\xbftest,order,run_seq,position,value\na,fixed,0,0,1.5\n")
    assert _import(good, tmp_path, capsys)[0] == 0
    assert stored_trials(str(tmp_path / "bom.sqlite")) == 1
    for cell, said in (("-1.5", "-1.5 is negative"), ("inf", "inf is not finite")):
        bad = tmp_path / f"bad{len(cell)}.csv"
        bad.write_text(f"test,order,run_seq,position,value\na,fixed,0,0,1\nb,fixed,0,1,{cell}\n")
        status, err = _import(bad, tmp_path, capsys)
        assert status == 2 and f"column 'value' (value), data row 2: {said}: refused" in err


def test_a_null_exit_code_is_a_failed_run(tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text('{"results": [{"command": "a", "times": [0.1, 0.2], "exit_codes": [0, null]}]}')
    assert _import(path, tmp_path, capsys)[0] == 0
    with contextlib.closing(sqlite3.connect(tmp_path / "x.sqlite")) as db:
        statuses = [r[0] for r in db.execute("SELECT status FROM trials ORDER BY trial")]
    assert statuses == ["ok", "failed"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
run_like = st.fixed_dictionaries(
    {"command": st.one_of(st.text(max_size=8), json_values), "times": json_values},
    optional={"exit_codes": json_values, "memory_usage_byte": json_values},
)
pyperf_like = st.fixed_dictionaries(
    {"benchmarks": st.one_of(json_values, st.lists(st.fixed_dictionaries(
        {"runs": st.one_of(json_values, st.lists(st.fixed_dictionaries(
            {}, optional={"values": json_values, "warmups": json_values}), max_size=3))},
        optional={"metadata": json_values}), max_size=3))},
    optional={"metadata": json_values},
)  # fmt: skip


@settings(max_examples=cases(60, 1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.builds(lambda r: {"results": r}, st.lists(run_like, max_size=3)), pyperf_like))
def test_any_json_shaped_like_an_export_is_refused_or_imported(tmp_path_factory, document):
    """Hypothesis' documents, in this process: a RecursionError cannot arise at this depth."""
    tmp = tmp_path_factory.mktemp("h")
    path = tmp / "x.json"
    path.write_text(json.dumps(document))
    tool = "hyperfine" if "results" in document else "pyperf"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["import", str(path), "--format", tool, "--store", str(tmp / "s.sqlite")])
    check_outcome([str(path), tool, str(tmp / "s.sqlite"), status, None, err.getvalue()])


cells = st.one_of(
    st.sampled_from(["", "nan", "inf", "-1", "0.5", "1e308", "1e999", "x", '"', "a,b", "\ufeff"]),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=4),
    st.floats(allow_nan=True).map(repr),
)


@settings(max_examples=cases(60, 1000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    header=st.sampled_from(
        ["test,order,run_seq,position,value", "\ufefftest,order,run_seq,position,value", "a,b"]
    ),
    rows=st.lists(st.lists(cells, min_size=1, max_size=6), max_size=6),
)
def test_any_csv_is_refused_in_one_line_or_imported(tmp_path_factory, header, rows):
    tmp = tmp_path_factory.mktemp("c")
    path = tmp / "x.csv"
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    path.write_text(header + "\n" + out.getvalue(), encoding="utf-8")
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(["import", str(path), "--format", "csv", "--store", str(tmp / "s.sqlite")])
    check_outcome([str(path), "csv", str(tmp / "s.sqlite"), status, None, err.getvalue()])
