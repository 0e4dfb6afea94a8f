"""Measures: regex / JSON path / column / lines extractors, and a real run that stores them."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from benchlang.model import Measure
from benchlang.run.measures import MeasureError, extract, json_path

SPEC = Path(__file__).parent / "specs" / "measures.bench"


def m(extractor: str, argument=None, series: bool = False) -> Measure:
    return Measure("m", series=series, source="stdout", extractor=extractor, argument=argument)


def test_regex_scalar_takes_the_last_match_and_series_takes_all():
    text = "lat 1.5 ms\nlat 2.25 ms\n"
    assert extract(m("regex", r"lat ([0-9.]+)"), text, "stdout") == 2.25
    assert extract(m("regex", r"lat ([0-9.]+)", True), text, "stdout").tolist() == [1.5, 2.25]
    assert extract(m("regex", r"[0-9]+\.[0-9]+"), "x 3.5 y", "stdout") == 3.5


def test_json_path_forms():
    doc = {"a": {"b": [7, 8.5]}, "c": 1}
    assert json_path(doc, "$.a.b[1]") == 8.5
    assert json_path(doc, "a.b.0") == 7
    assert json_path(doc, "$") == doc
    assert extract(m("json", "$.a.b", True), json.dumps(doc), "stdout").tolist() == [7, 8.5]
    assert extract(m("json", "c"), "log line\nmore log\n" + json.dumps(doc), "stdout") == 1


def test_column_by_name_and_number():
    csv_text = "x,y\n1,10\n2,20\n"
    assert extract(m("column", "y", True), csv_text, "f").tolist() == [10, 20]
    assert extract(m("column", 1, True), csv_text, "f").tolist() == [1, 2]
    assert extract(m("column", 2, True), "1 10\n2 20\n", "f").tolist() == [10, 20]


def test_lines():
    assert extract(m("lines", series=True), "4\n5\n\n6\n", "f").tolist() == [4, 5, 6]


@pytest.mark.parametrize(
    ("measure", "text", "reason"),
    [
        (m("regex", r"v=(\S+)"), "v=abc", "expected a number, got 'abc'"),
        (m("regex", r"v=([0-9]+)"), "nothing here", "no match for regex"),
        (m("regex", r"v=(\S+)"), "v=nan", "expected a finite number"),
        (m("regex", r"v=(\S+)", True), "v=1 v=inf", "expected a finite number"),
        (m("json", "a"), '{"a": NaN}', "expected a finite number"),
        (m("json", "a"), '{"a": true}', "expected a number"),
        (m("json", "a"), '{"a": [1]}', "expected a number"),
        (m("json", "a.b"), '{"a": 3}', "cannot index int"),
        (m("json", "a"), '{"b": 3}', "no key 'a'"),
        (m("json", "a[5]"), '{"a": [1]}', "no element '5'"),
        (m("json", "a"), "not json at all", "is not JSON"),
        (m("json", "a", True), '{"a": 3}', "expected a list"),
        (m("column", "z", True), "x,y\n1,2\n", "has no column 'z'"),
        (m("column", 3, True), "1 2\n3 4\n", "a row has no column 3"),
        (m("column", 1, True), "", "is empty"),
        (m("column", 1, True), "x\n", "holds no number"),
        (m("column", 2, True), "a b\n1 2\n3 x\n", "could not convert"),
        (m("lines", series=True), "", "holds no number"),
        (m("lines", series=True), "1\nfoo\n", "could not convert"),
        (m("lines", series=True), "1\ninf\n", "not a finite number"),
    ],
)
def test_unparseable_measures_raise_measure_error(measure, text, reason):
    with pytest.raises(MeasureError) as info:
        extract(measure, text, "f")
    assert reason in str(info.value)


@pytest.fixture(scope="module")
def measured(tmp_path_factory, cli_in_process):
    workdir = tmp_path_factory.mktemp("measures")
    spec = workdir / "measures.bench"
    shutil.copy(SPEC, spec)
    status, out, err = cli_in_process(
        ["run", spec, "--store", workdir / "m.sqlite", "--quiet"], cwd=workdir
    )
    assert status == 0, err
    return workdir / "m.sqlite", out


def test_run_stores_every_kind_of_measure(measured):
    store, _ = measured
    db = sqlite3.connect(store)
    trials = db.execute("SELECT trial, levels, status FROM trials ORDER BY trial").fetchall()
    assert len(trials) == 6 and {t[2] for t in trials} == {"ok"}
    for trial, levels, _ in trials:
        k = json.loads(levels)["k"]
        scalars = dict(
            db.execute("SELECT name, value FROM measures WHERE trial = ?", (trial,)).fetchall()
        )
        series = {
            name: np.frombuffer(data, dtype="<f8").tolist()
            for name, data in db.execute(
                "SELECT name, data FROM series_values WHERE trial = ?", (trial,)
            )
        }
        assert scalars["lat"] == k + 0.5
        assert scalars["j"] == k
        assert scalars["e"] == 42
        assert scalars["t"] == scalars["wall_time"] > 0
        assert scalars["u"] == scalars["user_time"]
        assert {"sys_time", "cpu_time", "max_rss", "minor_faults", "major_faults"} <= scalars.keys()
        assert series == {
            "lats": [1.5, k + 0.5],
            "ys": [10, 20, 30 + k],
            "xs": [1, 2, 3],
            "ls": [4, 5, 6],
        }


def test_results_json_and_csv_shape(measured, run_cli_many):
    store, _ = measured
    (status, out, err), csv = run_cli_many(
        [["results", store, "--json"], ["results", store, "--csv"]]
    )
    assert status == 0, err
    rows = json.loads(out)["configurations"]
    assert [r["configuration"]["levels"] for r in rows] == [{"k": 1}, {"k": 2}]
    for row, k in zip(rows, (1, 2), strict=True):
        assert row["configuration"]["benchmark"] == "m"
        assert row["n"] == 3 and row["failures"] == 0
        lat = dict(row["metrics"]["lat"])
        summary = lat.pop("summary")
        assert lat == {"n": 3, "median": k + 0.5, "min": k + 0.5, "max": k + 0.5, "unit": "ms"}
        assert (summary["n"], summary["mean"], summary["sd"], summary["iqr"]) == (3, k + 0.5, 0, 0)
        assert row["metrics"]["ys"]["median"] == 30 + k
    status, out, err = csv
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].split(",")[:4] == ["configuration", "benchmark", "n", "failures"]
    header = lines[0].split(",")
    first = dict(zip(header, lines[1].split(","), strict=True))
    assert first["n"] == "3" and float(first["lat_median"]) == 1.5


def test_a_regex_over_a_stream_finds_what_it_finds_over_the_whole_text(monkeypatch):
    """Block by block (blocks of 1 to 64 characters here, a margin longer than any match),
    the values equal a search of the whole text: anchors, lookarounds, multi-byte characters
    cut between blocks, empty matches."""
    import io
    import random
    import re

    from benchlang.run import measures

    monkeypatch.setattr(measures, "SCAN_MARGIN", 40)
    patterns = [r"v=([0-9]+)", r"^v=([0-9]+)", r"(?m)^v=([0-9]+)$", r"(?<=x)v=(\d+)",
                r"v=(\d+)(?=\n)", r"\d+", r"v=(\d+)$", r"é(\d)", r"x*"]  # fmt: skip
    pieces = ["v=", "x", "\n", "é", "yy", "v=1", "42", "7"]
    rng = random.Random(5)
    for block in (1, 3, 7, 64):
        monkeypatch.setattr(measures, "SCAN_BLOCK", block)
        for _ in range(300):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 16)))
            for source in patterns:
                pattern = re.compile(source)
                whole = [
                    m.group(1) if pattern.groups else m.group(0) for m in pattern.finditer(text)
                ]
                stream = io.BytesIO(text.encode())
                assert list(measures._regex_values(stream, pattern, keep_all=True)) == whole
                stream.seek(0)
                last = list(measures._regex_values(stream, pattern, keep_all=False))
                assert last == whole[-1:], (text, source)
