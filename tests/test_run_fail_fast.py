"""``benchlang run`` fails fast: when every trial of the first round fails,
the run stops after that round, shows the first failure's reason, exit status and stderr,
and exits 1, as hyperfine aborts on a failing command unless ``-i``; ``--keep-going`` (or
``-i``) runs every trial anyway; a run where only some trials fail goes on to the end. The
failed trials stay in the store, and ``--resume`` continues such a run."""

from __future__ import annotations

import sqlite3
import textwrap

import pytest

SPEC = textwrap.dedent(
    """\
    benchlang 1
    experiment failing {{
      factor n in [1, 2]
      benchmark b {{ run "{command}" {timeout}}}
      design {{ runs 3 order fixed }}
    }}
    """
)  # 3 rounds of 2 trials (n=1, n=2)


def write(where, command: str, timeout: str = "") -> None:
    (where / "f.bench").write_text(SPEC.format(command=command, timeout=timeout))


def stored(where) -> list[tuple[int, str, int, bytes]]:
    with sqlite3.connect(where / "f.sqlite") as db:
        return db.execute(
            "SELECT trial, status, exit_status, stderr_tail FROM trials ORDER BY trial"
        ).fetchall()


@pytest.mark.parametrize(
    ("command", "status", "stderr"),
    [("false {n}", 1, None), ("sh -c 'echo boom >&2; exit 3' {n}", 3, "boom")],
    ids=["false", "stderr-and-status"],
)
def test_a_failing_command_stops_after_the_first_round(
    tmp_path, cli_in_process, command, status, stderr
):
    write(tmp_path, command)
    code, out, err = cli_in_process(["run", "f.bench", "-q"], cwd=tmp_path)
    assert code == 1, out + err
    assert "Traceback" not in err
    assert "stopped after the first round: all 2 of its trials failed" in err
    assert f"exited with status {status}" in err and f"exit status: {status}" in err
    assert ("stderr (last lines):\n    boom" in err) if stderr else ("stderr: (empty)" in err)
    assert "--keep-going" in err and "--resume" in err
    rows = stored(tmp_path)
    assert [(t, s, x) for t, s, x, _ in rows] == [(0, "failed", status), (1, "failed", status)]
    assert rows[0][3] == (b"boom\n" if stderr else b"")
    assert "Reproducibility record" not in out  # nothing analysed from a stopped run


@pytest.mark.parametrize("flag", ["--keep-going", "-i"])
def test_keep_going_runs_every_trial(tmp_path, cli_in_process, flag):
    write(tmp_path, "false {n}")
    code, out, err = cli_in_process(["run", "f.bench", "-q", flag], cwd=tmp_path)
    assert "stopped after the first round" not in err
    assert len(stored(tmp_path)) == 6
    assert "6 trials failed:" in out
    assert code == (1 if flag == "--keep-going" else 0), out + err


def test_only_one_configuration_failing_goes_on_to_the_end(tmp_path, cli_in_process):
    write(tmp_path, "test {n} = 1")
    code, _, err = cli_in_process(["run", "f.bench", "-q"], cwd=tmp_path)
    assert code == 1 and "stopped after the first round" not in err
    assert [s for _, s, _, _ in stored(tmp_path)] == ["ok", "failed"] * 3
    assert "3 of 6 trials failed (exit status 1)" in err


def test_a_timeout_throughout_the_first_round_stops_the_run(tmp_path, cli_in_process):
    write(tmp_path, "sleep 5 {n}", timeout="timeout 100ms ")
    code, out, err = cli_in_process(["run", "f.bench", "-q"], cwd=tmp_path)
    assert code == 1, out + err
    assert "stopped after the first round" in err and "(timed out)" in err
    assert len(stored(tmp_path)) == 2


def test_resume_after_a_stop_continues_the_run(tmp_path, cli_in_process):
    write(tmp_path, "false {n}")
    assert cli_in_process(["run", "f.bench", "-q"], cwd=tmp_path)[0] == 1
    code, _, err = cli_in_process(["run", "f.bench", "-q", "--resume"], cwd=tmp_path)
    assert code == 1 and "stopped after the first round" in err
    assert len(stored(tmp_path)) == 4  # its own first round: the next one of the plan
    code, _, err = cli_in_process(
        ["run", "f.bench", "-q", "--resume", "--keep-going"], cwd=tmp_path
    )
    assert code == 1 and len(stored(tmp_path)) == 6
    assert "6 of 6 trials failed" in err


def test_the_failure_shown_is_escaped(tmp_path, cli_in_process):
    write(tmp_path, r"printf 'x\033]0;pwned\007done %s\n' {n} >&2; exit 1")
    code, out, err = cli_in_process(["run", "f.bench", "-q"], cwd=tmp_path)
    assert code == 1 and "stopped after the first round" in err
    assert "\x1b" not in out + err and "\x07" not in out + err
    assert r"x\x1b]0;pwned\x07done" in err


def test_the_record_of_a_run_without_a_successful_trial_is_one_line(tmp_path, cli_in_process):
    (tmp_path / "f.bench").write_text(
        textwrap.dedent(
            """\
            benchlang 1
            experiment kfail {
              benchmark b { run "false" measure time = wall_time }
              metric time { measure mean unit "s" better lower }
              kpi time { percentile 50 confidence 95% }
              design { runs auto series 1 }
            }
            """
        )
    )
    code, out, err = cli_in_process(["run", "f.bench", "-q", "-v", "--keep-going"], cwd=tmp_path)
    assert code == 1 and "Traceback" not in err
    record = [line for line in out.splitlines() if "Reproducibility record" in line]
    assert record == [
        "**Reproducibility record: kfail**: no trial succeeded: nothing to record (the failed"
        " trials, with their reasons, are in the store: benchlang results STORE --format json)"
    ]
    assert "| Parameter |" not in out and "| --- |" not in out
