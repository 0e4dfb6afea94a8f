"""``compare SPEC --base REF``'s design, through the CLI in process on the repository of
tests/test_compare_revisions.py (benchmarks that report their own time under a drifting
machine level): the builds of one configuration run next to each other in every round (a
randomised block), Stein's two-stage sizing when the spec does not fix its runs (pilot, size,
caps, said in the output), and a kept compare store refused by ``history add`` in one line.
Stein's arithmetic is checked against scipy's t; its coverage is simulated in
benchmarks/sim_compare_revisions.py --coverage."""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest

from benchlang.cli import main
from tests.test_compare_revisions import SPEC, left_as_it_was, repo  # noqa: F401

AUTO = SPEC.replace("  design { runs 8 }\n", "")


def write_spec(root, name: str, text: str) -> None:
    """A spec of the test's own, untracked and ignored (the repository stays clean)."""
    (root / name).write_text(text)
    with open(root / ".git" / "info" / "exclude", "a") as f:
        f.write(name + "\n")


def run_cli(capsys, *argv: object) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_each_configurations_builds_run_next_to_each_other(repo, tmp_path, capsys, monkeypatch):  # noqa: F811
    root, shas = repo
    monkeypatch.chdir(root)
    keep = tmp_path / "kept"
    code, out, err = run_cli(
        capsys, "compare", "bench.bench", "--base", shas[1], "--keep", keep, "--json"
    )
    assert code == 1, err
    with sqlite3.connect(keep / "compare.sqlite") as db:
        trials = db.execute(
            "SELECT round, position, benchmark FROM trials ORDER BY started"
        ).fetchall()
    assert len(trials) == 8 * 4
    firsts, heads_first = set(), 0
    for r in range(8):
        names = [b for rnd, _, b in trials if rnd == r]
        assert len(names) == 4
        pairs = [tuple(sorted(names[i : i + 2])) for i in (0, 2)]
        assert sorted(pairs) == [("v@base", "v@head"), ("w@base", "w@head")], names
        firsts.add(names[0].split("@")[0])
        heads_first += names[0].endswith("@head")
    assert firsts == {"v", "w"} and 0 < heads_first < 8  # both orders are still drawn
    doc = json.loads(out)
    assert doc["method"]["sizing"] is None and doc["method"]["rounds"] == 8
    assert "next to each other" in doc["method"]["design"]
    left_as_it_was(root, shas[2])


def test_warm_up_trials_stay_before_their_trial_in_its_block(repo, capsys, monkeypatch):  # noqa: F811
    root, shas = repo
    monkeypatch.chdir(root)
    write_spec(root, "warm.bench", SPEC.replace("runs 8", "runs 3 warmup 1"))
    keep = root.parent / "kept"
    code, _, err = run_cli(
        capsys, "compare", "warm.bench", "--base", shas[1], "--keep", keep, "--json"
    )
    assert code == 1, err
    with sqlite3.connect(keep / "compare.sqlite") as db:
        trials = db.execute(
            "SELECT round, position, benchmark, phase FROM trials ORDER BY started"
        ).fetchall()
    assert [t[3] for t in trials].count("warmup") == 4  # one a configuration, first round
    first = [(b, phase) for rnd, _, b, phase in trials if rnd == 0]
    assert len(first) == 8
    for i in range(0, 8, 2):  # each warm-up right before its measured trial
        assert first[i][1] == "warmup" and first[i + 1] == (first[i][0], "measured")
    measured = [b.split("@")[0] for _, b in first[1::2]]
    assert measured[0] == measured[1] and measured[2] == measured[3]  # blocks of one benchmark
    left_as_it_was(root, shas[2])


def test_rounds_auto_sizes_from_a_pilot_and_says_so(repo, tmp_path, capsys, monkeypatch):  # noqa: F811
    from benchlang.stats._special import t_ppf

    root, shas = repo
    monkeypatch.chdir(root)
    write_spec(root, "auto.bench", AUTO)
    keep = tmp_path / "kept"
    code, out, err = run_cli(
        capsys, "compare", "auto.bench", "--base", shas[1], "--pilot", 4, "--max-rounds", 9,
        "--keep", keep, "--json",
    )  # fmt: skip
    assert code == 1, err
    doc = json.loads(out)
    sizing, method = doc["method"]["sizing"], doc["method"]
    assert sizing["pilot"] == 4 and method["df"] == 3
    t = t_ppf(1 - 0.025, 3) + t_ppf(0.9, 3)  # the equivalence verdict's power: beta over two sides
    required = max(4, math.ceil((t * sizing["sd"] / math.log(1.02)) ** 2))
    assert sizing["required"] == required
    assert sizing["rounds"] == min(required, 9) == method["rounds"]
    assert all(r["rounds"] == method["rounds"] for r in doc["rows"])
    assert "pilot 4 rounds" in method["design"] and "80% power" in method["design"]
    assert ("two sessions" in method["design"]) == (method["rounds"] > 4)
    assert ("capped by --max-rounds 9 at 9" in method["design"]) == (required > 9)
    by = {r["configuration"]: r for r in doc["rows"]}
    assert by["w"]["verdict"] == "worse" and by["v"]["verdict"] != "worse"
    stores = sorted(p.name for p in keep.glob("*.sqlite"))
    assert stores == (
        ["compare-2.sqlite", "compare.sqlite"] if required > 4 else ["compare.sqlite"]
    )
    left_as_it_was(root, shas[2])


def test_max_time_caps_the_rounds_at_the_pilot(repo, capsys, monkeypatch):  # noqa: F811
    root, shas = repo
    monkeypatch.chdir(root)
    code, out, err = run_cli(
        capsys, "compare", "bench.bench", "--base", shas[1], "--head", shas[1],
        "--rounds", "auto", "--pilot", 3, "--max-time", "1ms", "--margin", "1%",
    )  # fmt: skip
    assert code in (0, 1), err
    text = " ".join(out.split())
    assert "Stein's two-stage design (--rounds auto): pilot 3 rounds" in text
    assert "capped by --max-time 0.001s at 3" in text
    left_as_it_was(root, shas[2])


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--rounds", "1"], "--rounds '1'"),
        (["--rounds", "many"], "--rounds 'many'"),
        (["--pilot", "1"], "--pilot 1"),
        (["--rounds", "5", "--pilot", "3"], "--pilot sizes --rounds auto"),
        (["--max-time", "soon"], "--max-time 'soon'"),
        (["--max-rounds", "3"], "--max-rounds 3 is below"),
    ],
)
def test_sizing_options_are_checked(repo, capsys, monkeypatch, argv, said):  # noqa: F811
    root, shas = repo
    monkeypatch.chdir(root)
    code, _, err = run_cli(capsys, "compare", "bench.bench", "--base", shas[1], *argv)
    assert code == 2 and said in err and "Traceback" not in err


def test_sizing_options_need_base(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "compare", "true", "--rounds", "auto")
    assert code == 2 and "--rounds needs --base" in err


def test_history_add_refuses_a_compare_store_in_one_line(repo, tmp_path, capsys, monkeypatch):  # noqa: F811
    root, shas = repo
    monkeypatch.chdir(root)
    spec = SPEC.replace(
        "better lower }", "better lower }\n  kpi time { percentile 50 confidence 95% }"
    )
    write_spec(root, "kpi.bench", spec)
    keep = tmp_path / "kept"
    code, _, err = run_cli(
        capsys, "compare", "kpi.bench", "--base", shas[1], "--rounds", 6, "--keep", keep
    )
    assert code == 1, err
    history = tmp_path / "history.sqlite"
    code, out, err = run_cli(
        capsys, "history", "add", keep / "compare.sqlite", "--history", history
    )
    assert code == 2 and not history.exists() and out == ""
    first = err.splitlines()[0]
    assert "a session of builds side by side (base/head: compare or bisect)" in first
    assert "history add takes a run of one revision" in first and "Traceback" not in err


def test_stein_rounds_and_interval_against_scipy():
    """Stein's size with beta split over the two one-sided tests of the equivalence verdict;
    the interval is Stein's, widened to the paired t on all rounds where that is wider (a
    pilot with no spread, or a second stage noisier than the pilot)."""
    from scipy import stats

    from benchlang.stats.two_stage import stein_interval, stein_rounds

    size = stein_rounds(np.array([0.02, 0.03, np.nan]), 10, 0.02, 0.005, 0.8, cap=None)
    t = stats.t.ppf(0.995, 9) + stats.t.ppf(0.9, 9)
    assert size.sd == 0.03 and size.required == math.ceil((t * 0.03 / 0.02) ** 2)
    assert size.rounds == size.required and not size.capped
    capped = stein_rounds(0.03, 10, 0.02, 0.005, 0.8, cap=20)
    assert capped.rounds == 20 and capped.capped and capped.required == size.required
    assert stein_rounds(0.001, 10, 0.02, 0.005).rounds == 10  # never below the pilot
    x = np.random.default_rng(3).normal(0.01, 0.02, 30)
    c = stein_interval(x, 8, 99.0)
    stein = stats.t.ppf(0.995, 7) * x[:8].std(ddof=1) / math.sqrt(30)
    paired = stats.t.ppf(0.995, 29) * x.std(ddof=1) / math.sqrt(30)
    half = max(stein, paired)
    assert c.estimate == pytest.approx(x.mean()) and c.rounds == 30
    assert c.upper - c.estimate == pytest.approx(half) and c.estimate - c.lower == pytest.approx(
        half
    )
    still = np.r_[np.zeros(10), np.log(1.6), np.zeros(39)]  # a count: no spread in the pilot
    z = stein_interval(still, 10, 95.0)
    assert z.upper - z.lower == pytest.approx(
        2 * stats.t.ppf(0.975, 49) * still.std(ddof=1) / math.sqrt(50)
    )
    assert z.lower < 0 < z.upper
    noisier = np.r_[x[:8], 3 * x[8:]]
    w = stein_interval(noisier, 8, 99.0)
    assert w.upper - w.estimate == pytest.approx(
        stats.t.ppf(0.995, 29) * noisier.std(ddof=1) / math.sqrt(30)
    )
    assert math.isnan(stein_interval(x[:1], 8).estimate)
