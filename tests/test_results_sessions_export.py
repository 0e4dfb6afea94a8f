"""Per-trial exports of a campaign: `results S1 S2 S3 --format csv|parquet|json` holds every
trial of every store, each with its `session` (1, 2, ... in the order given) and `store`, and
otherwise the columns and values of each store's own export; pandas and DuckDB read the CSV
and Parquet alike; other experiments, a plan a store lacks and the exports without a session
column are refused (exit 2, one line and a hint). Seeded values: each command prints its own,
scaled by a level file that differs between sessions, and fails for some seeds."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from benchlang.jsonout import loads

pd = pytest.importorskip("pandas")
pq = pytest.importorskip("pyarrow.parquet")

SPEC = """benchlang 1
experiment {name} {{
  seed 5
  factor tool in ["alpha", "beta"]
  benchmark gen {{
    run "awk -v s=$BENCHLANG_SEED -v l=$(cat level) -v k={{tool}} 'BEGIN{{{{srand(s); if ((s + l) % 9 == 0) exit 3; f = k == \\"beta\\" ? 2 : 1; print \\"t=\\" f*l*0.0001*(1+rand()/20)}}}}'"
    measure time from stdout regex "t=([0-9.]+)"
  }}
  metric time {{ measure mean unit "s" better lower }}
  design {{ runs 3 series 2 order random }}
}}
"""


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, cli_in_process) -> tuple[Path, list[str]]:
    """Three sessions of one spec (the third with another seed: another plan) and a store
    of another experiment; store paths relative to the directory, as a user gives them."""
    here = tmp_path_factory.mktemp("sessions")
    (here / "e.bench").write_text(SPEC.format(name="sessions"))
    (here / "o.bench").write_text(SPEC.format(name="others"))
    runs = [(97, "s1.sqlite", []), (104, "s2.sqlite", []), (88, "s3.sqlite", ["--seed", "8"])]
    for level, store, extra in runs:
        (here / "level").write_text(f"{level}\n")
        status, _, err = cli_in_process(
            ["run", "e.bench", "--store", store, "-q", "--keep-going", *extra], cwd=here
        )
        assert status in (0, 1), err
    status, _, err = cli_in_process(["run", "o.bench", "--store", "o.sqlite", "-q"], cwd=here)
    assert status in (0, 1), err
    return here, [store for _, store, _ in runs]


def _csv(cli, here: Path, stores: list[str]) -> tuple:
    status, out, err = cli(["results", *stores, "--format", "json"], cwd=here)
    assert status == 0, err
    doc = loads(out)
    strings = {c["name"]: "str" for c in doc["trial_columns"] if c["type"] == "string"}
    status, text, err = cli(["results", *stores, "--format", "csv"], cwd=here)
    assert status == 0, err
    return pd.read_csv(io.StringIO(text), dtype=strings), doc


def test_the_csv_holds_each_stores_own_export_with_its_session(campaign, cli_in_process):
    here, stores = campaign
    pooled, doc = _csv(cli_in_process, here, stores)
    assert list(pooled.columns[:3]) == ["session", "store", "trial"]
    own = [_csv(cli_in_process, here, [store])[0] for store in stores]
    assert len(pooled) == sum(len(f) for f in own)
    assert (pooled["status"] == "failed").any(), "the seeds make some trials fail"
    for session, (store, frame) in enumerate(zip(stores, own, strict=True), start=1):
        mine = pooled[pooled["session"] == session]
        assert set(mine["store"]) == {store}
        mine = mine.drop(columns=["session", "store"]).reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, frame, check_dtype=False)
    assert doc["campaign"]["stores"] == stores


def test_parquet_and_json_carry_the_same_columns_and_rows(campaign, cli_in_process):
    here, stores = campaign
    pooled, doc = _csv(cli_in_process, here, stores)
    status, _, err = cli_in_process(
        ["results", *stores, "--format", "parquet", "--output", "c.parquet"], cwd=here
    )
    assert status == 0, err
    parquet = pd.read_parquet(here / "c.parquet")
    meta = json.loads(pq.read_schema(here / "c.parquet").metadata[b"benchlang.trial_columns"])
    assert meta == doc["trial_columns"]
    assert list(parquet.columns) == list(pooled.columns) == [c["name"] for c in meta]
    types = {c["name"]: c["type"] for c in meta}
    assert types["session"] == "int64" and types["store"] == "string"
    pd.testing.assert_frame_equal(parquet, pooled, check_dtype=False)

    def at(row: dict, field: str):
        group, _, name = field.partition(".")
        return row[group].get(name) if name else row[group]

    rows = pd.DataFrame({c["name"]: [at(r, c["field"]) for r in doc["trials"]] for c in meta})
    pd.testing.assert_frame_equal(rows, pooled, check_dtype=False)
    failed = [r for r in doc["trials"] if r["status"] == "failed"]
    listed = {
        (t["session"], t["trial"])
        for row in doc["configurations"]
        for t in row["failed_trials"]
    }  # fmt: skip
    assert listed == {(r["session"], r["trial"]) for r in failed}
    assert all(r["exit_status"] == 3 and "stderr_last_line" in r for r in failed)
    assert not any("stderr_last_line" in r for r in doc["trials"] if r["status"] == "ok")
    assert all(r["started"] is not None for r in doc["trials"])


def test_pandas_and_duckdb_read_the_campaign_with_the_session_typed(campaign, cli_in_process):
    duckdb = pytest.importorskip("duckdb")
    here, stores = campaign
    status, out, err = cli_in_process(["results", *stores, "--format", "csv"], cwd=here)
    assert status == 0, err
    (here / "c.csv").write_text(out)
    status, _, err = cli_in_process(
        ["results", *stores, "--format", "parquet", "--output", "d.parquet"], cwd=here
    )
    assert status == 0, err
    frame = pd.read_parquet(here / "d.parquet")
    assert str(frame["session"].dtype) == "int64"
    assert pd.api.types.is_string_dtype(frame["store"])
    con = duckdb.connect()
    counts = {}
    for name in ("c.csv", "d.parquet"):
        reader = "read_csv_auto" if name.endswith("csv") else "read_parquet"
        relation = con.sql(f"SELECT * FROM {reader}('{here / name}')")
        kinds = dict(zip(relation.columns, map(str, relation.types), strict=True))
        assert kinds["session"] == "BIGINT" and kinds["store"] == "VARCHAR"
        counts[name] = con.sql(
            f"SELECT session, store, count(*) FROM {reader}('{here / name}') "
            "GROUP BY session, store ORDER BY session"
        ).fetchall()
    assert counts["c.csv"] == counts["d.parquet"]
    assert [(s, store) for s, store, _ in counts["c.csv"]] == list(enumerate(stores, start=1))


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["o.sqlite", "--format", "csv"], "a campaign is several sessions of one experiment"),
        (
            ["--format", "parquet", "--output", "x.parquet", "--plan", "PLAN"],
            "with several stores, --plan names a plan every store holds",
        ),
        (["--format", "markdown"], "no session column"),
        (["--summary-csv"], "no session column"),
        (["--format", "csv", "--output", "x.csv"], "--format parquet writes a file"),
    ],
)
def test_refusals_are_one_line_with_a_hint(campaign, cli_in_process, extra, says):
    here, stores = campaign
    if "PLAN" in extra:
        status, out, _ = cli_in_process(["results", stores[0], "--format", "json"], cwd=here)
        extra = [loads(out)["plan_hash"] if x == "PLAN" else x for x in extra]
    status, out, err = cli_in_process(["results", *stores, *extra], cwd=here)
    assert status == 2 and out == ""
    lines = err.strip().splitlines()
    assert says in lines[0] and "Traceback" not in err
    assert len(lines) <= 2
    assert not (here / "x.parquet").exists()


def test_a_plan_every_store_holds_applies_to_each(campaign, cli_in_process):
    here, stores = campaign
    status, out, _ = cli_in_process(["results", stores[0], "--format", "json"], cwd=here)
    plan = loads(out)["plan_hash"]
    status, text, err = cli_in_process(
        ["results", *stores[:2], "--plan", plan, "--format", "csv"], cwd=here
    )
    assert status == 0, err
    frame = pd.read_csv(io.StringIO(text))
    assert sorted(set(frame["session"])) == [1, 2]


def test_the_streamed_document_fills_each_row_with_its_own_session(campaign, monkeypatch):
    """``write_results_json``'s rows from templates equal the rows dumped one by one."""
    from benchlang.app.campaign import load_campaign
    from benchlang.jsonout import dumps
    from benchlang.report.exports import results_document, results_json

    here, stores = campaign
    monkeypatch.chdir(here)
    data = load_campaign(stores)
    assert results_json(data) == dumps(results_document(data)) + "\n"
    assert {r["session"] for r in loads(results_json(data))["trials"]} == {1, 2, 3}
