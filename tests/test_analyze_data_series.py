"""`analyze --data FILE --series COLUMN` keeps the series' names, in order of first appearance,
and takes `--better` per column."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchlang.cli import main

TRACES = ("wifi-b", "eth-a", "lte-c", "wifi-a")  # not in sorted order: names keep theirs


@pytest.fixture
def traces(tmp_path):
    rng = np.random.default_rng(3)
    rows = [(t, rng.lognormal(0, 0.1), rng.normal(100, 5)) for t in TRACES for _ in range(8)]
    path = tmp_path / "traces.csv"
    path.write_text("trace,time,rate\n" + "".join(f"{t},{a!r},{b!r}\n" for t, a, b in rows))
    return path, rows


def test_series_keep_their_names_and_each_column_its_direction(traces, capsys):
    path, rows = traces
    argv = ["analyze", "--data", str(path), "--series", "trace", "--json"]
    assert main([*argv, "--better", "time=lower", "--better", "rate=higher"]) == 0
    kpis = {k["metric"]: k for k in json.loads(capsys.readouterr().out)["kpis"]}
    for metric, column, bound, rank in (("time", 1, "upper", 7), ("rate", 2, "lower", 2)):
        series = kpis[metric]["series"]
        assert [s["series_name"] for s in series] == list(TRACES)
        assert [s["series"] for s in series] == [0, 1, 2, 3]
        for s in series:  # p50 at 95% of 8 values: X_(7) upper, X_(2) lower (Binomial(8, 1/2))
            values = np.sort([r[column] for r in rows if r[0] == s["series_name"]])
            assert s["bound"] == bound and s["rank"] == rank
            assert s["value"] == values[rank - 1]
    assert main(["analyze", "--data", str(path), "--series", "trace"]) == 0
    text = capsys.readouterr().out
    assert all(f" {name}  8  p50 upper" in text for name in TRACES)


def test_one_direction_for_every_column(traces, capsys):
    path, _ = traces
    assert main(["analyze", "--data", str(path), "--better", "higher", "--json"]) == 0
    kpis = json.loads(capsys.readouterr().out)["kpis"]
    assert {s["bound"] for k in kpis for s in k["series"]} == {"lower"}
    assert all("series_name" not in s for k in kpis for s in k["series"])


@pytest.mark.parametrize(
    ("better", "message"),
    [
        (["rate=faster"], "--better: 'faster' is not lower or higher"),
        (["speed=higher"], "--better names speed, not a numeric column of"),
        (["lower", "rate=higher"], "--better takes one direction for every column or"),
    ],
)
def test_a_wrong_better_is_refused_in_words(traces, capsys, better, message):
    path, _ = traces
    argv = ["analyze", "--data", str(path)]
    for b in better:
        argv += ["--better", b]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
