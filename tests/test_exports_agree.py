"""Exports that agree: the trial exports of a run and of an import, as CSV,
Parquet and JSON, read by pandas with the same columns and types; a string column stays a
string when all null; an import's generated factor never takes a fixed column's name; units
in the names and in the metadata. Seeded synthetic values (the commands print them)."""

from __future__ import annotations

import io
import json
import textwrap
from pathlib import Path

import pytest

from benchlang.cli import main

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

SPEC = textwrap.dedent(
    """\
    benchlang 1
    experiment agree {
      seed 5
      factor tool in ["alpha", "beta"]
      benchmark gen {
        run "awk -v s=$BENCHLANG_SEED 'BEGIN{{srand(s); print \\"t=\\" 0.01*(1+rand()/20)}}'"
        measure time from stdout regex "t=([0-9.]+)"
      }
      metric time { measure mean unit "s" better lower }
      design { runs 5 series 2 order random }
    }
    """
)
HYPERFINE = {
    "results": [
        {"command": "sleep 0.01", "times": [0.011, 0.012, 0.0115, 0.0118, 0.0112],
         "exit_codes": [0, 0, 0, 0, 0]},
        {"command": "sleep 0.02", "times": [0.021, 0.022, 0.0215, 0.0218, 0.0212],
         "exit_codes": [0, 0, 0, 0, 0]},
    ]
}  # fmt: skip
FIXED = [
    "trial", "series", "round", "position", "order", "host", "benchmark", "configuration",
    "configuration_index",
]  # fmt: skip
AFTER = ["phase", "status", "reason", "exit_status", "started", "ended"]


def exports(store: Path, where: Path, capsys) -> tuple[dict, pd.DataFrame, pd.DataFrame, dict]:
    """The JSON document, the CSV and Parquet read by pandas, and Parquet's column notes."""
    assert main(["results", str(store), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["results", str(store), "--format", "csv"]) == 0
    text = capsys.readouterr().out
    strings = {c["name"]: "str" for c in doc["trial_columns"] if c["type"] == "string"}
    csv_frame = pd.read_csv(io.StringIO(text), dtype=strings)
    parquet = where / f"{store.stem}.parquet"
    assert main(["results", str(store), "--format", "parquet", "--output", str(parquet)]) == 0
    capsys.readouterr()
    meta = json.loads(pq.read_schema(parquet).metadata[b"benchlang.trial_columns"])
    return doc, csv_frame, pd.read_parquet(parquet), {c["name"]: c for c in meta}


def from_json(doc: dict) -> pd.DataFrame:
    """The document's trials as the same columns: each where ``trial_columns`` says."""
    rows = doc["trials"]

    def at(row: dict, field: str):
        group, _, name = field.partition(".")
        return row[group].get(name) if name else row[group]

    return pd.DataFrame(
        {c["name"]: [at(r, c["field"]) for r in rows] for c in doc["trial_columns"]}
    )


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("agree")
    (where / "agree.bench").write_text(SPEC)
    run = where / "run.sqlite"
    assert main(["run", str(where / "agree.bench"), "--store", str(run), "-q"]) == 0
    hf = where / "hf.json"
    hf.write_text(json.dumps(HYPERFINE))
    imported = where / "imp.sqlite"
    assert main(["import", str(hf), "--store", str(imported)]) == 0
    return run, imported


@pytest.mark.parametrize("which", [0, 1], ids=["run", "import"])
def test_csv_parquet_and_json_have_one_column_set(stores, which, tmp_path, capsys):
    doc, csv_frame, parquet, meta = exports(stores[which], tmp_path, capsys)
    names = [c["name"] for c in doc["trial_columns"]]
    assert list(csv_frame.columns) == list(parquet.columns) == names == list(meta)
    assert names[: len(FIXED)] == FIXED and len(set(names)) == len(names)
    assert "time_s" in names and "metric:time_s" in names and meta["time_s"]["unit"] == "s"
    pd.testing.assert_frame_equal(csv_frame, parquet, check_exact=False, rtol=1e-12)
    as_json = from_json(doc).astype(parquet.dtypes.to_dict())
    pd.testing.assert_frame_equal(as_json, parquet, check_exact=False, rtol=1e-12)
    assert (parquet["configuration_index"].dtype.kind, parquet["configuration"].dtype.kind) in {
        ("i", "O"), ("i", "T")
    }  # fmt: skip
    assert (parquet["started"] <= parquet["ended"]).all() and parquet["started"].notna().all()


def test_a_run_and_an_import_append(stores, tmp_path, capsys):
    _, _, run, _ = exports(stores[0], tmp_path, capsys)
    _, _, imported, _ = exports(stores[1], tmp_path, capsys)
    shared = FIXED + AFTER + ["time_s", "metric:time_s"]
    assert run[shared].dtypes.to_dict() == imported[shared].dtypes.to_dict()
    assert imported["reason"].isna().all(), "nothing failed: an all-null reason column"
    schemas = [pq.read_schema(tmp_path / f"{s.stem}.parquet") for s in stores]
    for name in shared:
        assert schemas[0].field(name).type == schemas[1].field(name).type, name
    assert schemas[1].field("reason").type == pa.string()
    tables = [pq.read_table(tmp_path / f"{s.stem}.parquet", columns=shared) for s in stores]
    assert pa.concat_tables(tables).num_rows == len(run) + len(imported)


def test_an_imports_factor_does_not_take_the_configuration_column(stores, tmp_path, capsys):
    doc, csv_frame, parquet, _ = exports(stores[1], tmp_path, capsys)
    assert list(csv_frame.columns).count("configuration") == 1
    assert parquet["configuration"].tolist() == ["sleep 0.01"] * 5 + ["sleep 0.02"] * 5
    assert parquet["configuration_index"].tolist() == [0] * 5 + [1] * 5
    assert (parquet["factor_configuration"] == parquet["configuration"]).all()
    assert {c["field"] for c in doc["trial_columns"]} >= {"levels.configuration", "measures.time"}
    import benchlang

    frame = benchlang.open_store(stores[1]).trials()
    assert frame["configuration"].tolist() == [0] * 5 + [1] * 5, "the API's index stays an index"
    assert frame["factor_configuration"].astype(str).tolist()[0] == "sleep 0.01"


def test_duckdb_reads_a_run_and_an_import_with_the_same_columns_and_types(stores, tmp_path, capsys):
    """DuckDB, the other reader the exports are for: each store's Parquet and CSV (the CSV with
    the column types the JSON document states, as a reader of it would pass them) have the
    same names and types for a run and an import, and the two Parquet files read as one."""
    duckdb = pytest.importorskip("duckdb")
    sql_type = {"string": "VARCHAR", "int64": "BIGINT", "float64": "DOUBLE"}
    described = []
    for store in stores:
        doc, _, _, _ = exports(store, tmp_path, capsys)
        assert main(["results", str(store), "--format", "csv"]) == 0
        csv = tmp_path / f"{store.stem}.csv"
        csv.write_text(capsys.readouterr().out)
        types = {c["name"]: sql_type[c["type"]] for c in doc["trial_columns"]}
        parquet = duckdb.sql(f"DESCRIBE SELECT * FROM '{tmp_path / f'{store.stem}.parquet'}'")
        from_csv = duckdb.read_csv(str(csv), dtype=types)
        columns = {row[0]: row[1] for row in parquet.fetchall()}
        assert list(columns) == [c["name"] for c in doc["trial_columns"]] == from_csv.columns
        assert list(columns.values()) == [str(t) for t in from_csv.types], store.stem
        described.append(columns)
    shared = FIXED + AFTER + ["time_s", "metric:time_s"]
    assert {n: described[0][n] for n in shared} == {n: described[1][n] for n in shared}
    both = duckdb.sql(
        f"SELECT count(*) FROM read_parquet(['{tmp_path / 'run.parquet'}', "
        f"'{tmp_path / 'imp.parquet'}'], union_by_name = true)"
    ).fetchall()
    run_rows = duckdb.sql(f"SELECT count(*) FROM '{tmp_path / 'run.parquet'}'").fetchall()
    assert both == [(run_rows[0][0] + 10,)]
