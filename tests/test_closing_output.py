"""The first ten minutes: the README's spec, copied into an empty
directory, runs in a 100-column pseudo-terminal with no failed trial and ends with the answer
for a person (what ran, the ranking in a few lines, where the rest is, no raw Markdown); every
view of the store shows the metric in one unit; the store's lock and WAL files are gone after a
clean close; ``order --json`` and ``results --summary-csv`` answer where their text forms do."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tests.conftest import cli_here
from tests.docs_sessions import blocks, environment

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
QUANTITY = re.compile(r"(?<![\w.:])\d+(?:\.\d+)? ?(ns|µs|ms|s|min|h)(?![\w/])")
HEADER_UNIT = re.compile(r"[(\[](ns|µs|ms|s|min|h)[)\]]")


def in_terminal(argv: list[str], cwd: Path, columns: int = 100) -> tuple[int, str]:
    """Run ``argv`` on a pseudo-terminal of ``columns`` columns: its status and what a person
    sees (escape sequences dropped, each line as the last carriage return left it)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: its terminal is the pty's other end
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
        os.chdir(cwd)
        os.execvpe(argv[0], argv, {**environment(), "TERM": "xterm", "COLUMNS": str(columns)})
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    _, status = os.waitpid(pid, 0)
    text = ANSI.sub("", b"".join(chunks).decode(errors="replace"))
    lines = [line.rstrip("\r").split("\r")[-1] for line in text.split("\n")]
    return os.waitstatus_to_exitcode(status), "\n".join(lines)


def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """A command in this process (``cli_here``), in a user's shell's environment; only what a
    terminal shows (``in_terminal``) needs a process of its own."""
    code, out, err = cli_here(args, cwd=cwd, environ=environment())
    return subprocess.CompletedProcess(args, code, out, err)


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory):
    """The README's spec block, copied into an empty directory and run in a terminal."""
    spec = next(b for b in blocks("README.md") if b.directives.get("same-as"))
    here = tmp_path_factory.mktemp("readme")
    (here / "quickstart.bench").write_text("\n".join(spec.lines) + "\n")
    status, seen = in_terminal([sys.executable, "-m", "benchlang", "run", "quickstart.bench"], here)
    left = sorted(p.name for p in here.iterdir() if p.name.startswith("quickstart.sqlite"))
    (here / "files after the run").write_text(" ".join(left))
    return here, status, seen


def test_the_readme_spec_runs_without_a_failed_trial(quickstart):
    _, status, seen = quickstart
    assert status == 0, seen
    assert "Ran 75 trials of quickstart (3 configurations x 5 series on local): 0 failed" in seen


def test_the_run_ends_with_the_short_answer_and_no_raw_markdown(quickstart):
    """What ran, the ranking in words with intervals that hold jointly, what was checked, where
    the rest is: at most 20 lines from "Ran" on, no line wider than the terminal."""
    _, _, seen = quickstart
    answer = seen[seen.index("Ran 75 trials") :].strip().splitlines()
    assert len(answer) <= 20, answer
    assert answer[1].startswith("time by tool: median (ms), lower is better; "), answer
    assert re.search(r"(intervals hold jointly at 95% over \d comparisons|no interval)", answer[1])
    ranked = answer[2:5]
    assert sorted(line.split()[0] for line in ranked) == ["b2sum", "md5sum", "sha256sum"]
    assert ranked[0].endswith("best")
    assert all(re.search(r"slower than \w+|no clear difference|no value", x) for x in ranked[1:])
    assert any(line.strip().startswith(("Checked:", "No interval:")) for line in answer[5:])
    assert "More: benchlang analyze quickstart.sqlite" in seen
    assert "Reproducibility record" not in seen  # one command away: benchlang record
    assert "**" not in seen and "| ---" not in seen and "`" not in seen
    wide = [line for line in seen.splitlines() if len(line) > 100]
    assert not wide, wide


def _units(text: str) -> set[str]:
    return set(QUANTITY.findall(text)) | set(HEADER_UNIT.findall(text))


def test_one_unit_per_metric_in_every_view(quickstart):
    here, _, seen = quickstart
    store = "quickstart.sqlite"
    views = {"run": seen[seen.index("Ran 75 trials") :]}
    for name, args in {
        "results": ["results", store],
        "results markdown": ["results", store, "--format", "markdown"],
        "record": ["record", "--store", store, "--format", "markdown"],
        "record latex": ["record", "--store", store, "--format", "latex"],
        "order": ["order", store],
        "diff": ["diff", store, store],
    }.items():
        done = cli(args, here)
        assert done.returncode == 0, done.stderr
        views[name] = done.stdout
    status, views["record in a terminal"] = in_terminal(
        [sys.executable, "-m", "benchlang", "record", "--store", store], here
    )
    assert status == 0
    assert cli(["report", store, "-o", "r.html"], here).returncode == 0
    html = (here / "r.html").read_text()
    start = html.index("<h3>Per configuration</h3>")
    views["html"] = html[start : html.index("</table>", start)]
    record = json.loads(cli(["record", "--store", store, "--format", "json"], here).stdout)
    units = {name: _units(text) for name, text in views.items()}
    shown = set().union(*units.values())
    assert len(shown) == 1, units
    assert all(units.values()), units  # every view says its unit
    assert {m["display_unit"] for m in record["metrics"]} == shown


def test_the_record_is_a_table_in_a_terminal_and_markdown_in_a_pipe(quickstart):
    here, _, _ = quickstart
    piped = cli(["record", "--store", "quickstart.sqlite"], here).stdout
    assert piped.startswith("**Reproducibility record: quickstart**") and "| --- |" in piped
    _, seen = in_terminal(
        [sys.executable, "-m", "benchlang", "record", "--store", "quickstart.sqlite"], here
    )
    assert "**" not in seen and "| --- |" not in seen
    assert re.search(r"^KPI\s+[\d.]+ ms\s+[\d.]+ ms\s+[\d.]+ ms$", seen, re.M), seen


def test_a_clean_close_leaves_no_lock_or_wal_file(quickstart):
    here, _, _ = quickstart
    assert (here / "files after the run").read_text() == "quickstart.sqlite"


def test_order_json_answers_on_a_random_order_store(quickstart):
    here, _, _ = quickstart
    text = cli(["order", "quickstart.sqlite"], here)
    done = cli(["order", "quickstart.sqlite", "--json"], here)
    assert text.returncode == done.returncode == 0, done.stderr
    body = json.loads(done.stdout)
    assert body["configurations"] is None and "fixed_vs_random" in body["note"]
    assert len(body["positions"]["configurations"]) == 3
    assert {p["configuration"] for p in body["carry_over"]["strongest"]} == {
        f"digest[tool={t}]" for t in ("sha256sum", "md5sum", "b2sum")
    }


def test_the_summary_csv_has_its_own_name_and_the_old_one_still_works(quickstart):
    here, _, _ = quickstart
    new = cli(["results", "quickstart.sqlite", "--summary-csv"], here)
    old = cli(["results", "quickstart.sqlite", "--csv"], here)
    per_trial = cli(["results", "quickstart.sqlite", "--format", "csv"], here)
    assert new.stdout == old.stdout and len(new.stdout.splitlines()) == 4
    assert "--summary-csv" in old.stderr and not new.stderr
    assert len(per_trial.stdout.splitlines()) == 76


# Its module fixtures are built once: under pytest -n the whole module runs on one worker
# (--dist loadgroup, pyproject.toml).
pytestmark = pytest.mark.xdist_group("test_closing_output")
