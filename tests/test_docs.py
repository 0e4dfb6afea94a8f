"""Executed documentation: every shell session of README.md and docs/*.md
runs, and its output is what the page shows (tests/docs_sessions.py; conventions in
docs/testing.md). A page that drifts from the code turns this red."""

from __future__ import annotations

import pytest

from tests.docs_sessions import PAGES, ROOT, blocks, matches, run_page

SESSION_PAGES = [
    pytest.param(page, marks=[pytest.mark.machine_wide] * restores)
    for page in PAGES
    for found in [blocks(page)]
    if any(b.session or b.directives for b in found)
    for restores in [any("restores" in b.directives for b in found)]
]
"""A page with a block that writes a setting of the whole machine (``restores: PATH``, e.g.
docs/machine.md's ``system tune``) runs alone (``machine_wide``), never beside other tests."""


@pytest.mark.parametrize("page", SESSION_PAGES)
def test_the_page_shows_what_its_commands_print(page, tmp_path):
    outcome = run_page(page, tmp_path)
    assert not outcome.problems, "\n\n".join(outcome.problems)
    print(f"{page}: {outcome.ran} commands run, {outcome.skipped} sessions skipped")
    for skip in outcome.skips:
        print(skip)


def test_every_session_runs():
    """The docs test runs every example. A session that needs a machine state, a
    killed run or a crafted file gets a preparation (tests/docs_runs.py), not a skip."""
    skipped = [
        f"{page}:{block.line}: {block.directives['skip']}"
        for page in PAGES
        for block in blocks(page)
        if block.session and "skip" in block.directives
    ]
    assert skipped == []


def test_a_restored_setting_is_written_back_under_the_lock(tmp_path):
    """A ``restores: PATH`` block runs, and PATH is as before after it, also when the block's
    own commands leave it changed; the page's other sessions still run."""
    knob = tmp_path / "knob"
    knob.write_text("2\n")
    text = (
        f"```\n$ cat {knob}\n2\n```\n\n<!-- restores: {knob} -->\n"
        f"```\n$ echo 0 > {knob}; cat {knob}\n0\n```\n\n```\n$ cat {knob}\n2\n```\n"
    )
    (tmp_path / "page").mkdir()
    outcome = run_page("docs/machine.md", tmp_path / "page", text)
    assert not outcome.problems, outcome.problems
    assert outcome.ran == 3 and knob.read_text() == "2\n"


def test_the_readme_spec_is_the_quickstart():
    shown = [b for b in blocks("README.md") if b.directives.get("same-as")]
    assert [b.directives["same-as"] for b in shown] == ["specs/quickstart.bench"]


def test_a_changed_line_of_output_fails(tmp_path):
    """One line of an example's output changed in a copy of a page: the runner names it. The
    copy keeps one self-contained session (it shows its spec with ``cat``) at its place."""
    page = "docs/diagnostics.md"
    block = next(b for b in blocks(page) if any(c.text.startswith("cat ") for c in b.commands()))
    command = next(c for c in block.commands() if c.text.startswith("benchlang") and c.expected)
    text = (ROOT / page).read_text().splitlines()
    lines = [""] * (block.line - 1) + text[block.line - 1 : block.line + len(block.lines) + 1]
    assert lines[command.line] == command.expected[0]  # the line after the command
    (tmp_path / "same").mkdir()
    assert not run_page(page, tmp_path / "same", "\n".join(lines) + "\n").problems
    lines[command.line] += " (changed)"
    (tmp_path / "page").mkdir()
    outcome = run_page(page, tmp_path / "page", "\n".join(lines) + "\n")
    assert [p.split("\n")[0] for p in outcome.problems] == [
        f"{page}:{command.line}: $ {command.text}"
    ]


def test_the_sqlite3_standin_prints_what_the_shell_prints(tmp_path):
    """.ci/run does not install the SQLite shell; where it is absent, docs/store.md's queries
    run through the stand-in of tests/docs_stores.py. Forced here, the page still matches, so
    the stand-in prints the shell's list, -csv and -header -column formats."""
    outcome = run_page("docs/store.md", tmp_path, standin=True)
    assert not outcome.problems, "\n\n".join(outcome.problems)
    assert outcome.ran >= 12


def test_wildcards_and_varying_numbers():
    assert matches(["a ... c", "...", "end"], "a b c\nx\ny\nend\n")
    assert not matches(["a ... c", "end"], "a b c\nx\nend\n")
    assert matches(["took 1.5 s, hash 3fa9c2e1d0"], "took 12.25 s, hash 77b1e2c3d4", varies=True)
    assert not matches(["took 1.5 s"], "took 1.5 ms", varies=True)
