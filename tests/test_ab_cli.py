"""``benchlang simulate-aa`` (Bakshy & Frachtenberg, WWW 2015, §6)."""

from __future__ import annotations

import argparse
import json

import pytest

from benchlang.cli import simulate_aa as mod
from benchlang.errors import UserError


def run(argv):
    p = argparse.ArgumentParser()
    sub = p.add_subparsers()
    mod.add_parser(sub)
    args = p.parse_args(["simulate-aa", *argv])
    return args.func(args)


COMPONENTS = "request=1.05,host=0.12,request_batch=0.1,host_batch=0.075,residual=0.1"


def test_json_report_of_the_fully_balanced_layout(capsys):
    status = run(
        [
            "--layout",
            "fully_balanced",
            "--hosts",
            "8",
            "--requests",
            "64",
            "--components",
            COMPONENTS,
            "--experiments",
            "200",
            "--replicates",
            "60",
            "--seed",
            "1",
            "--json",
        ]
    )
    assert status == 0
    out = json.loads(capsys.readouterr().out)
    rates = {s["cluster"]: s["type_i_error"] for s in out["schemes"]}
    assert set(rates) == {"iid", "request", "host", "host-block"}
    assert rates["iid"] < 0.03 and rates["request"] > 0.2 and rates["host"] < 0.2
    assert out["simulated_sd"] == pytest.approx(out["analytic_se"], rel=0.2)


def test_table_report(capsys):
    run(
        [
            "--layout",
            "host_balanced",
            "--hosts",
            "4",
            "--requests",
            "16",
            "--components",
            "request=1,residual=0.5",
            "--experiments",
            "50",
            "--replicates",
            "20",
        ]
    )
    out = capsys.readouterr().out
    assert "host_balanced" in out and "host-block" in out and "Type I error" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--components", "user=1"], "bad component"),
        (["--components", "request=abc"], "not a number"),
        (["--components", "request=-1"], ">= 0"),
        (["--components", "request=1", "--layout", "unbalanced", "--hosts", "5"], "even"),
        (["--components", "request=1", "--experiments", "1"], "at least 2"),
    ],
)
def test_user_errors(argv, message):
    with pytest.raises(UserError, match=message):
        run(argv)


ONE_HOST = ["--hosts", "1", "--requests", "8", "--components", COMPONENTS, "--experiments", "40"]


def test_a_scheme_without_clusters_to_resample_is_shown_without_a_rate(capsys):
    run([*ONE_HOST, "--replicates", "20", "--seed", "1"])
    out = capsys.readouterr().out
    host_row = next(line for line in out.splitlines() if line.startswith("host "))
    assert host_row.split()[2:4] == ["-", "-"]
    assert "host, host-block: 1 cluster(s) per version: with one, every bootstrap" in out
    assert "no rate is given" in out
    run([*ONE_HOST, "--replicates", "20", "--seed", "1", "--json"])
    schemes = {s["cluster"]: s for s in json.loads(capsys.readouterr().out)["schemes"]}
    assert schemes["host"]["type_i_error"] is None
    assert schemes["host"]["type_i_error_interval"] is None
    assert schemes["host"]["tested"] == 0 and schemes["host"]["clusters_per_version"] == [1, 1]
    assert "no rate is given" in schemes["host"]["note"]
    assert schemes["request"]["tested"] == 40 and "note" not in schemes["request"]


def test_a_scheme_below_the_analysis_floor_is_flagged(capsys):
    run(
        [
            "--hosts",
            "4",
            "--requests",
            "16",
            "--components",
            COMPONENTS,
            "--experiments",
            "40",
            "--replicates",
            "20",
            "--seed",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert "host, host-block: 4 clusters per version, under the 5 benchlang's analysis" in out
