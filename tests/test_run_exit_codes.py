"""``benchlang run``'s exit statuses (docs/cli.md#run), and its output never passing a trial's
control characters to the terminal."""

from __future__ import annotations

import textwrap

import pytest

from benchlang.run.progress import Progress, printable

SPEC = textwrap.dedent(
    """\
    benchlang 1
    experiment codes {{
      benchmark b {{ run "{command}" }}
      design {{ runs 2 }}
    }}
    """
)


def write(where, command: str) -> None:
    (where / "c.bench").write_text(SPEC.format(command=command))


@pytest.mark.parametrize(
    ("command", "extra", "status"),
    [
        ("true", [], 0),
        ("exit 3", ["--keep-going"], 1),
        ("exit 3", ["--ignore-failure"], 0),
        ("exit 3", ["-i"], 0),
        ("test $BENCHLANG_TRIAL = 0", [], 1),
    ],
    ids=["ok", "failed", "ignore-failure", "i", "one-failed"],
)
def test_run_exits_non_zero_when_trials_failed(tmp_path, cli_in_process, command, extra, status):
    write(tmp_path, command)
    code, out, err = cli_in_process(["run", "c.bench", "-q", *extra], cwd=tmp_path)
    assert code == status, out + err
    assert "Traceback" not in err
    if status == 1:
        assert "failed (exit status 1); accept failed trials with --ignore-failure (-i)" in err
    if command != "true":
        assert "trials failed:" in out  # reported either way


def test_run_exits_1_when_its_first_round_failed_throughout(tmp_path, cli_in_process):
    write(tmp_path, "exit 3")  # tests/test_run_fail_fast.py: what it shows
    code, out, err = cli_in_process(["run", "c.bench", "-q"], cwd=tmp_path)
    assert code == 1, out + err
    assert "stopped after the first round" in err and "Traceback" not in err


def test_failure_output_reaches_the_terminal_escaped(tmp_path, run_cli):
    """A process of its own: all it writes to its stdout and stderr, the trial's too, is read."""
    write(tmp_path, r"printf 'x\033]0;pwned\007\033[2Jdone\n' >&2; exit 1")
    code, out, err = run_cli(["run", "c.bench", "-i"], cwd=tmp_path)
    assert code == 0, err
    assert "\x1b" not in out + err and "\x07" not in out + err and "\r" not in out + err
    assert r"stderr: x\x1b]0;pwned\x07\x1b[2Jdone" in out


def test_progress_notes_are_escaped_and_not_markup(tmp_path):
    path = tmp_path / "log"
    with path.open("w") as stream:
        progress = Progress(1, stream=stream)
        progress.note("host h stopped: setup exited with status 1: \x1b[31m[bold]boom[/]\x08")
        progress.close()
    assert (
        path.read_text()
        == "host h stopped: setup exited with status 1: \\x1b[31m[bold]boom[/]\\x08\n"
    )


def test_printable_keeps_text_and_escapes_controls():
    assert printable("naïve — ok\ttab") == "naïve — ok\ttab"
    assert printable("a\rb\x08") == "a\\x0db\\x08"
    assert printable("a\nb") == "a\nb" and printable("a\nb", one_line=True) == "a\\nb"
    assert printable("\x9b31m\u202eevil") == "\\x9b31m\\u202eevil"
