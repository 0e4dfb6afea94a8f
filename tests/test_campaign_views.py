"""Campaigns in `results`, `report` and `figure`: several stores of one
experiment read as sessions. The commands report their own value: a session's level read from
a file written before its `benchlang run`, a trial's noise from its seed, a host's factor from
BENCHLANG_HOST; so the between-session share, the per-session and per-host summaries and the
intervals over sessions are checked against numbers computed here from the same trials."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

SPEC = """benchlang 1

experiment {name} {{
  seed 11
  hosts local {{ slots {slots} }}
  factor speed in [100, 110]
  benchmark b {{
    run "sh -c 'h=10; [ \\"$BENCHLANG_HOST\\" = local:1 ] && h={host}; echo t=$(( {{speed}} * $(cat level) * h * (1000 + ($BENCHLANG_SEED % 41)) ))'"
    measure t from stdout regex "t=([0-9]+)"
  }}
  metric t {{ measure mean unit "us" better lower }}
  kpi t {{ percentile 50 confidence 95% }}
  design {{ runs {runs} order {order} }}
}}
"""

LEVELS = np.round(1000 * np.random.default_rng(3).lognormal(0.0, 0.05, 6)).astype(int)
"""Six sessions' levels, a lognormal factor with sigma 5% (the issue's shared runner)."""


def strict(text: str) -> dict:
    return json.loads(text, parse_constant=pytest.fail)


def _sessions(cli, here, name, levels, **spec):
    (here / f"{name}.bench").write_text(SPEC.format(name=name, **spec))
    stores = []
    for i, level in enumerate(levels):
        where = here / f"{name}{i}"
        where.mkdir()
        (where / "level").write_text(f"{level}\n")
        store = here / f"{name}{i}.sqlite"
        status, _, err = cli(["run", here / f"{name}.bench", "--store", store, "-q"], cwd=where)
        assert status == 0, err
        stores.append(store)
    return stores


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, cli_in_process):
    """Six sessions on one host, three on two hosts (local:1 20% slower), two in fixed- and
    random-order rounds, one of another experiment imported from a CSV."""
    here = tmp_path_factory.mktemp("views")
    one = _sessions(cli_in_process, here, "camp", LEVELS, slots=1, host=10, runs=5, order="random")
    two = _sessions(
        cli_in_process, here, "pair", LEVELS[:3], slots=2, host=12, runs=6, order="random"
    )
    _sessions(
        cli_in_process, here, "fvr", LEVELS[:2], slots=1, host=10, runs=6, order="fixed_vs_random"
    )
    rows = ["test,order,run_seq,position,value"]
    rows += [f"b,random,{r},{p},{1.0 + 0.01 * r}" for r in range(4) for p in range(2)]
    (here / "other.csv").write_text("\n".join(rows) + "\n")
    status, _, err = cli_in_process(
        ["import", here / "other.csv", "--store", here / "other.sqlite"], cwd=here
    )
    assert status == 0, err
    return here, one, two


def _values(document: dict, configuration: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    trials = [t for t in document["trials"] if t["configuration"] == configuration]
    return (
        np.array([t["metrics"]["t"] for t in trials], dtype=float),
        np.array([t["session"] for t in trials]),
        np.array([t["host"] for t in trials]),
    )


def test_results_recover_the_session_share_and_use_sessions_as_clusters(campaign, cli_in_process):
    here, stores, _ = campaign
    status, out, err = cli_in_process(["results", *stores, "--json"], cwd=here)
    assert status == 0, err
    document = strict(out)
    block = document["campaign"]
    assert block["sessions"] == 6 and block["stores"] == [str(s) for s in stores]
    assert "sessions as the top clusters" in block["spread"]
    truth = float(np.var(np.log(LEVELS), ddof=1))  # the sessions' levels, as drawn
    for row in document["configurations"]:
        label = row["configuration"]["label"]
        values, session, _ = _values(document, label)
        metric = row["metrics"]["t"]
        share = metric["between_sessions"]
        listed = next(r for r in block["between_sessions"] if r["configuration"] == label)
        assert listed == {"metric": "t", "configuration": label, **share}
        assert share["sessions"] == 6 and share["trials"] == 30
        assert share["between"] == pytest.approx(truth, rel=0.15)
        assert share["within"] < 0.0003  # the seed's ~1.2% noise, not the sessions'
        assert share["icc"] > 0.85
        logs = np.log(values)
        f = scipy_stats.f_oneway(*(logs[session == s] for s in range(1, 7)))
        assert share["p_value"] == pytest.approx(f.pvalue, rel=1e-6)
        # the pooled mean's interval: t(5) over the six session means
        means = np.array([values[session == s].mean() for s in range(1, 7)])
        half = scipy_stats.t.ppf(0.975, 5) * means.std(ddof=1) / math.sqrt(6)
        interval = metric["summary"]["mean_interval"]
        assert interval["level"] == "session" and interval["clusters"] == 6
        assert interval["df"] == 5
        assert interval["lower"] == pytest.approx(means.mean() - half, rel=1e-9)
        assert interval["upper"] == pytest.approx(means.mean() + half, rel=1e-9)
        # each session summarised alone, as its own store would be
        per = metric["sessions"]
        assert [e["session"] for e in per] == [1, 2, 3, 4, 5, 6]
        assert [e["store"] for e in per] == [str(s) for s in stores]
        for e, mean in zip(per, means, strict=True):
            assert e["summary"]["mean"] == pytest.approx(mean, rel=1e-12)
            assert e["summary"]["mean_interval"]["level"] != "session"
    (ranking,) = document["headline"][0]["rankings"]
    assert ranking["levels"][0] == "session" and ranking["units"][0] == 6
    # six sessions: the cluster-level t on the sessions' contrasts (df 5), here computed again
    # from the trials; every session draws the same trial seeds, so the contrasts barely vary
    (comparison,) = ranking["comparisons"]
    assert ranking["family"]["df"] == 5 and "cluster-level t" in ranking["family"]["method"]
    labels = [row["configuration"]["label"] for row in document["configurations"]]
    medians = []
    for label in labels:
        values, session, _ = _values(document, label)
        medians.append([np.median(np.log(values[session == s])) for s in range(1, 7)])
    d = np.array(medians[comparison["worse"]]) - np.array(medians[comparison["better"]])
    half = scipy_stats.t.ppf(0.975, 5) * d.std(ddof=1) / math.sqrt(6)
    assert comparison["ratio"] == pytest.approx(math.exp(d.mean()), rel=1e-9)
    assert comparison["ratio"] == pytest.approx(1.1, rel=0.02)
    assert comparison["lower"] == pytest.approx(math.exp(d.mean() - half), rel=1e-9)
    assert comparison["upper"] == pytest.approx(math.exp(d.mean() + half), rel=1e-9)
    assert comparison["clear"]
    single = strict(cli_in_process(["results", stores[0], "--json"], cwd=here)[1])
    assert "campaign" not in single and "session" not in single["trials"][0]
    alone = single["configurations"][0]["metrics"]["t"]
    assert "sessions" not in alone and alone["summary"]["mean_interval"]["level"] == "round"
    assert (
        alone["summary"] == document["configurations"][0]["metrics"]["t"]["sessions"][0]["summary"]
    )
    status, text, _ = cli_in_process(["results", *stores], cwd=here)
    assert status == 0
    assert "6 sessions pooled" in text and f"1 = {stores[0]}" in text
    assert "between sessions (6 stores, one session each)" in text
    assert "  session 6 " in text and "6 session" in text


def test_per_host_summaries_use_the_host_column_not_the_session(campaign, cli_in_process):
    here, _, stores = campaign
    status, out, err = cli_in_process(["results", *stores, "--json"], cwd=here)
    assert status == 0, err
    document = strict(out)
    for row in document["configurations"]:
        values, _session, host = _values(document, row["configuration"]["label"])
        hosts = row["metrics"]["t"]["hosts"]
        assert sorted(hosts) == ["local:0", "local:1"]  # three sessions, two hosts
        for name, summary in hosts.items():
            assert summary["n"] == int((host == name).sum()) == 9
            assert summary["mean"] == pytest.approx(values[host == name].mean(), rel=1e-12)
            assert summary["mean_interval"]["level"] == "session"
            assert summary["mean_interval"]["clusters"] == 3
        assert hosts["local:1"]["mean"] / hosts["local:0"]["mean"] == pytest.approx(1.2, rel=0.02)
    text = cli_in_process(["results", *stores], cwd=here)[1]
    assert "  host local:1" in text and "  session 3" in text


def test_stores_of_another_experiment_are_refused(campaign, cli_in_process):
    here, stores, _ = campaign
    for command in (["results"], ["results", "--json"], ["report", "-o", here / "x.html"]):
        status, out, err = cli_in_process([*command, stores[0], here / "other.sqlite"], cwd=here)
        assert status == 2 and not out.strip(), (command, out)
        assert "a campaign is several sessions of one experiment" in err
        assert "Traceback" not in err and len(err.strip().splitlines()) <= 2
    assert not (here / "x.html").exists()
    status, _, err = cli_in_process(["results", *stores, "--format", "markdown"], cwd=here)
    assert status == 2 and "no session column" in err


def test_the_report_covers_the_sessions_and_shows_their_share(campaign, cli_in_process):
    here, stores, _ = campaign
    page = here / "camp.html"
    status, out, err = cli_in_process(["report", *stores, "-o", page, "--no-figures"], cwd=here)
    assert status == 0, err
    assert "6 sessions" in out
    html = page.read_text()
    assert "6 sessions · stores " in html and "in 6 sessions of 2 configurations" in html
    section = html[html.index("<section id='sessions'>") :]
    section = section[: section.index("</section>")]
    assert all(f"<td>{s}</td><td>sha256:" in section for s in stores)  # each with its plan
    assert "This page covers 6 sessions of experiment camp" in section
    document = strict(cli_in_process(["results", *stores, "--json"], cwd=here)[1])
    for share in document["campaign"]["between_sessions"]:
        row = f"<td>{share['configuration']}</td><td class='num'>6</td><td class='num'>30</td>"
        assert row in section
        assert f"<td>{share['icc']:.2f}</td>" in section
        assert f"<td>{share['design_effect']:.2f}</td>" in section
    assert "6 sessions are the top clusters" in html  # the ranking says what it carries
    from benchlang.app.report import report_inputs
    from benchlang.report.analysis import build_record

    inputs = report_inputs(stores, with_headline=False)  # the record the page is built from
    for metric in build_record(inputs.data, inputs.kpis).metrics:
        assert metric.summary["mean_interval"]["level"] == "session"
        assert metric.summary["mean_interval"]["clusters"] == 6
    one = here / "one.html"
    assert cli_in_process(["report", stores[0], "-o", one, "--no-figures"], cwd=here)[0] == 0
    assert "id='sessions'" not in one.read_text()


def test_figures_label_sessions_or_say_they_would_pool_them(campaign, cli_in_process):
    here, six, three = campaign
    listed = strict(cli_in_process(["figure", *six, "--list", "--json"], cwd=here)[1])
    applies = {f["name"]: f for f in listed["figures"]}
    assert {n for n, f in applies.items() if f["applies"]} == {
        "series-boxes",
        "levels",
        "level-means",
    }
    assert "cdf draws one session and would pool these 6 sessions" in applies["cdf"]["reason"]
    alone = strict(cli_in_process(["figure", six[0], "--list", "--json"], cwd=here)[1])
    assert next(f for f in alone["figures"] if f["name"] == "cdf")["applies"]
    status, out, err = cli_in_process(["figure", *six[:2], "cdf", "-o", here / "c.svg"], cwd=here)
    assert status == 2 and "cdf draws one session and would pool these 2 sessions" in err
    assert not (here / "c.svg").exists()
    status, _, err = cli_in_process(["figure", six[0], here / "other.sqlite", "levels"], cwd=here)
    assert status == 2 and "a campaign is several sessions of one experiment" in err

    status, out, err = cli_in_process(["figure", *three, "level-means", "--json"], cwd=here)
    assert status == 0, err
    figure = strict(out)
    assert (
        "a line per session" in figure["caption"]
        and "pools the levels of host" in figure["caption"]
    )
    (said,) = [n for n in figure["notes"] if n.startswith("3 sessions")]
    assert all(f"session {i + 1} = {s}" in said for i, s in enumerate(three))
    results = strict(cli_in_process(["results", *three, "--json"], cwd=here)[1])
    means = {
        (str(e["session"]), str(row["configuration"]["levels"]["speed"])): e["summary"]["mean"]
        for row in results["configurations"]
        for e in row["metrics"]["t"]["sessions"]
    }
    rows = [dict(zip(figure["columns"], r, strict=True)) for r in figure["rows"]]
    assert len(rows) == 6
    scale = {means[(r["session"], r["speed"])] / r["mean"] for r in rows}
    assert max(scale) == pytest.approx(min(scale), rel=1e-6)  # each line is its session's mean

    page = here / "figs.html"
    assert cli_in_process(["report", *three, "-o", page], cwd=here)[0] == 0
    html = page.read_text()
    assert 'id="fig-levels"' in html and 'id="fig-kpi-scatter"' not in html


def test_order_figures_draw_the_tests_stratified_by_session(campaign, cli_in_process):
    here = campaign[0]
    stores = [here / "fvr0.sqlite", here / "fvr1.sqlite"]
    order = strict(cli_in_process(["order", *stores, "--json"], cwd=here)[1])
    assert order["sessions"] == 2
    status, out, err = cli_in_process(["figure", *stores, "order-pvalues", "--json"], cwd=here)
    assert status == 0, err
    figure = strict(out)
    (said,) = [n for n in figure["notes"] if n.startswith("2 sessions, stratified")]
    assert f"session 2 = {stores[1]}" in said
    drawn = {r[0]: r[1] for r in figure["rows"]}
    tested = {c["configuration"]: c["p_value"] for c in order["configurations"]}
    assert drawn == pytest.approx(tested, rel=1e-12) and len(drawn) == 2
