"""`benchlang compare 'CMD' 'CMD'`: hyperfine's habit with no spec. The
commands run interleaved in random rounds through the same path as `benchlang run`; the spec it
ran is ordinary text (`--spec-out`) that `run` accepts unchanged; hyperfine's options keep their
meaning (`--runs`, `--warmup`, `--prepare`, `-L`, `-N`, exports)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from benchlang.app.quick_compare import CompareRequest, compare_spec_text, expanded_commands
from benchlang.errors import UserError


def trials(store) -> list[tuple[str, str, int]]:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT label, phase, round FROM trials ORDER BY started").fetchall()


def test_two_commands_are_ranked_and_the_spec_reruns(tmp_path, cli_in_process):
    spec, store = tmp_path / "c.bench", tmp_path / "c.sqlite"
    status, out, err = cli_in_process(
        ["compare", "true", "sleep 0.01", "--runs", "6", "--warmup", "1", "-q",
         "--spec-out", spec, "--store", store, "--export-json", tmp_path / "c.json"],
        cwd=tmp_path,
    )  # fmt: skip
    assert status == 0, err
    assert "time by command: median (ms), lower is better; intervals hold jointly" in out
    assert "sleep 0.01" in out and "true" in out
    ran = trials(store)
    assert len([t for t in ran if t[1] == "warmup"]) == 2
    measured = [t for t in ran if t[1] != "warmup"]
    assert len(measured) == 12 and len({t[2] for t in measured}) == 6
    document = json.loads((tmp_path / "c.json").read_text(), parse_constant=pytest.fail)
    assert document["kind"].startswith("benchlang.")
    text = spec.read_text()
    assert 'factor command in ["true", "sleep 0.01"]' in text
    assert "order random warmup 1" in text and 'workdir "."' in text
    status, _, err = cli_in_process(["check", spec], cwd=tmp_path)
    assert status == 0, err
    status, _, err = cli_in_process(["run", spec, "--store", tmp_path / "again.sqlite", "-q"])
    assert status == 0, err  # from anywhere: the workdir is relative to the spec
    assert [t[0] for t in trials(tmp_path / "again.sqlite")] == [t[0] for t in ran]


def test_prepare_runs_before_every_trial_and_commands_run_where_compare_started(
    tmp_path, cli_in_process
):
    status, _, err = cli_in_process(
        ["compare", "--runs", "5", "-q", "--prepare", "echo p >> prepared.txt",
         "echo {x} >> ran.txt", "-L", "x", "a,b"],
        cwd=tmp_path,
    )  # fmt: skip
    assert status == 0, err
    assert (tmp_path / "prepared.txt").read_text().count("p\n") == 10
    assert sorted((tmp_path / "ran.txt").read_text().split()) == ["a"] * 5 + ["b"] * 5
    assert "temporary store, now removed" in err


def test_refusals_are_one_line_with_exit_2(tmp_path, cli_in_process):
    for args, says in (
        (["compare", "-N", "echo a | cat"], "-N runs commands without a shell"),
        (["compare", "echo {n}", "-L", "m", "1,2"], "-L m: no command has {m}"),
        (["compare", "true", "true"], "a command is given twice"),
        (["compare", "true", "--runs", "0"], "--runs 0: at least 1 is needed"),
    ):
        status, _, err = cli_in_process(args, cwd=tmp_path)
        assert status == 2 and says in err and "Traceback" not in err, (args, err)
        assert not list(tmp_path.glob("*.sqlite"))


def test_parameter_lists_expand_as_hyperfine_does():
    assert expanded_commands(["sleep {t}", "echo {t}"], [("t", ("1", "2"))]) == [
        "sleep 1", "sleep 2", "echo 1", "echo 2",
    ]  # fmt: skip
    assert expanded_commands(["a {x} {y}"], [("x", ("1", "2")), ("y", ("p",))]) == [
        "a 1 p", "a 2 p",
    ]  # fmt: skip
    with pytest.raises(UserError, match="no -L y gives its values"):
        expanded_commands(["a {x} {y}"], [("x", ("1",))])


def test_braces_and_quotes_in_commands_stay_literal_in_the_spec(tmp_path, cli_in_process):
    """A command's text is a level run as code: quotes and braces reach the shell as typed."""
    command = """awk 'BEGIN { printf "%s\\n", "{}" }' > out.txt"""
    text = compare_spec_text(CompareRequest((command,), rounds=1, prepare="echo {x}"), ".")
    spec = tmp_path / "q.bench"
    spec.write_text(text)
    status, _, err = cli_in_process(
        ["run", spec, "--store", tmp_path / "q.sqlite", "-q"], cwd=tmp_path
    )
    assert status == 0, err
    assert (tmp_path / "out.txt").read_text() == "{}\n"
    assert "kpi" not in text  # one round: no median bound (TriScale needs 5)


def test_a_command_that_always_fails_is_named_by_its_command(tmp_path, cli_in_process):
    """The reason the ranking has no interval names the command, not "configuration 0"."""
    status, out, _ = cli_in_process(["compare", "false", "true"], cwd=tmp_path)
    assert status == 1
    assert "No interval: false has no positive values." in out
    assert "configuration 0" not in out
