"""The scipy-free binomial CDF behind ``sizing`` (so that ``check`` never loads scipy), and the
one CSV reader that every command taking numbers from a CSV uses."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from scipy.stats import binom

from benchlang.csvrows import numbers_of, parse_number, read_numeric_column, read_rows, read_table
from benchlang.errors import UserError
from benchlang.stats._orderstat import check_percent, min_samples
from benchlang.stats.sizing import binom_cdf, sizing


@pytest.mark.parametrize("n", [1, 2, 5, 17, 59, 100, 299, 1000, 3000])
@pytest.mark.parametrize("p", [1e-3, 0.01, 0.05, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999])
def test_binom_cdf_agrees_with_scipy(n, p):
    ks = sorted({*range(-2, min(n, 40) + 2), *np.linspace(0, n, 41).astype(int), n - 1, n, n + 3})
    ours = np.array([binom_cdf(int(k), n, p) for k in ks])
    assert np.max(np.abs(ours - binom.cdf(ks, n, p))) <= 1e-12


def test_binom_cdf_edges():
    assert binom_cdf(-1, 10, 0.3) == 0.0 and binom_cdf(10, 10, 0.3) == 1.0
    assert binom_cdf(3, 10, 0.0) == 1.0 and binom_cdf(3, 10, 1.0) == 0.0


def test_sizing_matches_triscale_table_2():
    assert [sizing(95, 95), sizing(95, 99), sizing(99, 95), sizing(90, 95), sizing(50, 95)] == [
        59,
        90,
        299,
        29,
        5,
    ]


PERCENTILES = [1, 5, 10, 25, 50, 75, 90, 95, 97.5, 99, 99.5, 99.9]
CONFIDENCES = [50, 75, 90, 95, 99, 99.9]


@pytest.mark.parametrize("exclude", [0, 1, 2, 5, 10])
def test_sizing_is_the_scipy_order_statistic_answer(exclude):
    """Identical to the order-statistic search over scipy's CDF, over the whole grid."""
    for p, c in itertools.product(PERCENTILES, CONFIDENCES):
        expected = min_samples(check_percent("p", p), check_percent("c", c), None, exclude)
        assert sizing(p, c, exclude) == expected, (p, c, exclude)


def test_sizing_refuses_bad_input():
    for bad in [
        (0, 95, 0),
        (100, 95, 0),
        (50, 100, 0),
        (50, 95, -1),
        (50, 95, 1.5),
        (50, 95, True),
    ]:
        with pytest.raises(ValueError):
            sizing(*bad)


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def write_bytes(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_parse_number_spells_missing_values_one_way():
    assert parse_number(" 2.5 ") == 2.5 and parse_number("1e3") == 1000.0
    assert all(math.isnan(parse_number(c)) for c in ["", " ", "NaN", "na", "NULL"])
    assert parse_number("t1") is None


def test_header_is_detected_and_columns_chosen_by_name_or_number(tmp_path):
    with_header = write(tmp_path, "h.csv", "time,quality\nt0,1.5\nt1,\nt2,3\n")
    values, name = read_numeric_column(with_header)
    assert name == "quality" and values[0] == 1.5 and math.isnan(values[1]) and values[2] == 3
    assert read_numeric_column(with_header, "2")[1] == "quality"
    bare = write(tmp_path, "bare.csv", "1,10\n2,20\n\n3,30\n")
    values, name = read_numeric_column(bare, "2")
    assert name == "2" and values.tolist() == [10, 20, 30]
    assert not read_table(bare).has_header and read_table(with_header).has_header


def test_errors_are_for_people(tmp_path):
    two = write(tmp_path, "two.csv", "a,b\n1,2\n3,4\n")
    with pytest.raises(UserError, match="2 numeric columns"):
        read_numeric_column(two)
    with pytest.raises(UserError, match="no column 'c'") as info:
        read_numeric_column(two, "c")
    assert info.value.hint == "columns: a, b"
    bad = write(tmp_path, "bad.csv", "a\n1\nx\n")
    with pytest.raises(UserError, match=r"bad\.csv:3: column 'a': not a number: 'x'"):
        read_numeric_column(bad, "a", header=True)
    gap = write(tmp_path, "gap.csv", "a\n1\n\n2\nnan\n")
    with pytest.raises(UserError, match=r"gap\.csv:4: column 'a' holds 'nan'"):
        read_numeric_column(gap, allow_missing=False)
    with pytest.raises(UserError, match="has no data rows"):
        read_table(write(tmp_path, "empty.csv", "a,b\n"))
    with pytest.raises(UserError, match="cannot read"):
        read_table(tmp_path / "absent.csv")
    with pytest.raises(UserError, match="not a readable CSV"):
        read_table(write_bytes(tmp_path, "latin1.csv", b"a\n\xff\xfe\n"))


def test_rows_and_picked_cells(tmp_path):
    path = write(tmp_path, "rows.csv", "test,value\nx,1\ny\n")
    assert read_rows(path) == [{"test": "x", "value": "1"}, {"test": "y", "value": ""}]
    values = numbers_of([r["value"] for r in read_rows(path)], "rows.csv: value")
    assert values[0] == 1 and math.isnan(values[1])
    with pytest.raises(UserError, match="not a number: 'x'"):
        numbers_of(["x"], "where")


def test_import_reads_values_through_the_shared_reader(tmp_path, capsys):
    """A missing value is a failed trial (as 'nan' was); a non-number names file, line and column."""
    from benchlang.cli import main

    good = write(
        tmp_path,
        "trials.csv",
        "test,order,run_seq,position,value\na,fixed,0,0,1.5\nb,fixed,0,1,\na,random,1,0,NA\n",
    )
    store = tmp_path / "s.sqlite"
    assert main(["import", str(good), "--store", str(store)]) == 0
    assert "imported 3 trials, 2 failed of 2 configurations in 2 rounds" in capsys.readouterr().out
    assert main(["results", str(store), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    rows = {r["configuration"]["label"]: r for r in document["configurations"]}
    assert (rows["a"]["n"], rows["a"]["failures"], rows["b"]["failures"]) == (1, 1, 1)
    assert rows["a"]["metrics"]["value"]["median"] == 1.5
    bad = write(tmp_path, "bad.csv", "test,order,run_seq,position,value\na,fixed,0,0,fast\n")
    assert main(["import", str(bad), "--store", str(tmp_path / "t.sqlite")]) == 2
    assert "bad.csv:2: column 'value': not a number: 'fast'" in capsys.readouterr().err
