"""Pathological specs end in positioned diagnostics, never a traceback, in linear time.

Deep nesting once raised RecursionError, a 5,000-digit number Python's int-str limit
ValueError, ``coverage <400 nines>%`` OverflowError; a 1 MB string took seconds and
hundreds of MB in the lexer's regular expression.
"""

from __future__ import annotations

import time
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchlang.cli import main
from benchlang.lang.check import check_source
from benchlang.lang.diagnostics import Source, SpecError
from benchlang.lang.syntax import MAX_DIGITS, MAX_NESTING

SPEC = 'benchlang 1\nexperiment e {\n  benchmark b { run "true" }\n%s\n}\n'


def the_error(text: str) -> tuple[str, int, int, str | None]:
    """(message, line, column, hint) of the first error of a spec that must fail."""
    with pytest.raises(SpecError) as info:
        check_source(Source("t.bench", text))
    first = next(d for d in info.value.diagnostics if d.severity == "error")
    assert first.span is not None, first
    return first.message, first.span.line, first.span.column, first.hint


@pytest.mark.parametrize("depth", [MAX_NESTING + 1, 490, 5000])
def test_deep_nesting_is_a_diagnostic_at_the_first_bracket_too_deep(depth):
    line = "  factor n in " + "[" * depth + "1" + "]" * depth
    message, row, column, hint = the_error(SPEC % line)
    assert message == f"brackets nest more than {MAX_NESTING} deep"
    # the experiment's brace is the first level
    assert (row, column) == (4, len("  factor n in ") + MAX_NESTING)
    assert hint


def test_nesting_inside_strings_and_comments_does_not_count():
    deep = "[" * 1000
    text = SPEC % f'  title "{deep}"\n  # {deep}\n  setup """{deep}"""'
    assert check_source(Source("t.bench", text)).experiment.title == deep


def test_unclosed_deep_brackets_are_refused_too():
    message, *_ = the_error(SPEC % ("  design { layout x " + "{ a " * 600))
    assert message.startswith("brackets nest more than")


@pytest.mark.parametrize(
    "line",
    [
        "  seed " + "1" * 5000,
        "  factor n in [" + "1" * 5000 + "]",
        "  factor n in [-" + "1" * 5000 + "]",
        "  factor n in [1] coverage " + "9" * 400 + "%",
        "  timeout " + "9" * 400 + "s",
        "  design { runs " + "1" * 5000 + " }",
    ],
)
def test_overlong_numbers_are_positioned_errors(line):
    message, row, column, hint = the_error(SPEC % line)
    assert message.endswith(f"more than benchlang reads ({MAX_DIGITS})")
    digits = max(len(w.strip("[]-%s")) for w in line.split())
    assert message.startswith(f"this number has {digits} digits")
    assert row == 4
    assert line[column - 1] in "0123456789-"
    assert hint


def test_a_long_line_is_shown_cut_around_the_caret():
    text = SPEC % ('  title "' + "a" * 10_000 + '" seed "x"')
    with pytest.raises(SpecError) as info:
        check_source(Source("t.bench", text))
    rendered = str(info.value).splitlines()
    assert rendered[0].startswith("t.bench:4:")
    assert len(rendered[1]) < 200 and rendered[1].strip().startswith("...")
    caret = rendered[2].index("^")
    assert rendered[1][caret:] == '"x"'
    assert rendered[2][caret:] == "^~~"


def test_one_megabyte_string_is_linear_in_time_and_memory():
    text = SPEC % ('  title "' + "a" * 1_000_000 + '"')
    tracemalloc.start()
    start = time.process_time()  # CPU time: a busy machine does not inflate it
    compiled = check_source(Source("t.bench", text))
    seconds = time.process_time() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(compiled.experiment.title) == 1_000_000
    assert seconds < 2.0
    assert peak < 50 * len(text)  # was ~600 bytes per input byte in the lexer's regex


def test_many_errors_on_one_huge_line_render_in_linear_time():
    text = "benchlang 1 experiment e { " + 'seed "x" ' * 20_000 + "}"
    start = time.process_time()  # CPU time: a busy machine does not inflate it
    with pytest.raises(SpecError):
        check_source(Source("t.bench", text))
    assert time.process_time() - start < 5.0


@pytest.mark.parametrize(
    "text",
    [
        SPEC % ("  factor n in " + "[" * 490 + "1" + "]" * 490),
        SPEC % ("  seed " + "1" * 5000),
        SPEC % ("  factor n in [1] coverage " + "9" * 400 + "%"),
    ],
)
def test_the_cli_exits_2_with_file_line_col(tmp_path, capsys, text):
    path = tmp_path / "p.bench"
    path.write_text(text)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:4:" in err and ": error: " in err and "^" in err and "hint: " in err


PIECES = st.sampled_from(
    ["[", "]", "{", "}", "(", ")", '"', "#", "\n", "1" * 120, "9" * 400 + "%", "1e400", "x"]
)


@settings(max_examples=150, deadline=None)
@given(st.lists(PIECES, max_size=300), st.integers(min_value=0, max_value=3000))
def test_bracket_and_number_soup_never_raises_anything_but_spec_error(pieces, depth):
    text = SPEC % ("  factor n in " + "[" * depth + "".join(pieces))
    try:
        check_source(Source("t.bench", text))
    except SpecError as err:
        assert any(d.severity == "error" for d in err.diagnostics)
