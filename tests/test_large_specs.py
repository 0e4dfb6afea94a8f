"""Large specs: ``check`` and ``fmt`` refuse a spec above MAX_BYTES at once
with a positioned error and exit 2 (an 8 MB spec took 31 s and 416 MB in ``check``), and are
linear below it (``fmt`` compared every brace of a block with every statement in it: its
replacement finds the brace the quadratic scan found). How fast is a benchmark's question, not
a test's: benchmarks/bench_large_specs.py times them on 100 KB to 8 MB (250 KB within 10 s
for both was this file's bound)."""

from __future__ import annotations

import importlib.util
import re
import time
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from benchlang.cli import main
from benchlang.lang import format as fmt
from benchlang.lang.syntax import MAX_BYTES

_bench = importlib.util.spec_from_file_location(
    "bench_large_specs",
    Path(__file__).resolve().parents[1] / "benchmarks" / "bench_large_specs.py",
)
bench = importlib.util.module_from_spec(_bench)
_bench.loader.exec_module(bench)


def test_a_spec_above_the_bound_is_refused_at_once_by_check_and_fmt(tmp_path, capsys):
    path = tmp_path / "huge.bench"
    text = bench.spec(8_000_000)
    path.write_text(text)
    for argv in (["check", str(path)], ["fmt", str(path)], ["fmt", "--check", str(path)]):
        started = time.monotonic()
        assert main(argv) == 2
        assert time.monotonic() - started < 5
        err = capsys.readouterr().err
        first = err.splitlines()[0]
        found = re.fullmatch(
            rf"{re.escape(str(path))}:(\d+):(\d+): error: the spec is 7\.6 MiB, more than "
            r"benchlang reads \(1\.0 MiB\)",
            first,
        )
        assert found, err
        line, column = int(found.group(1)), int(found.group(2))
        offset = sum(len(x) + 1 for x in text.split("\n")[: line - 1]) + column - 1
        assert offset == MAX_BYTES  # where the spec passes the bound
        assert "Traceback" not in err
    assert path.read_text() == text  # fmt left it as it was


def test_a_large_spec_below_the_bound_is_checked_and_formatted(tmp_path, capsys):
    """A spec of 250 KB, below the bound, is read whole: checked, and already as ``fmt`` lays
    it out."""
    path = tmp_path / "large.bench"
    path.write_text(bench.spec(250_000))
    assert main(["check", str(path)]) == 0
    assert main(["fmt", "--check", str(path)]) == 0
    assert "ok: experiment big" in capsys.readouterr().out


def naive_first_own(braces, start, end, covered):
    own = [b for b in braces if start <= b < end and not any(s <= b < e for s, e in covered)]
    return own[0] if own else None


@given(st.lists(st.integers(0, 60), max_size=12), st.data())
def test_the_first_brace_of_a_block_is_found_as_the_quadratic_scan_found_it(cuts, data):
    """Children are ordered spans that do not overlap; braces anywhere."""
    points = sorted(set(cuts))
    covered = list(zip(points[::2], points[1::2], strict=False))
    braces = sorted(set(data.draw(st.lists(st.integers(0, 70), max_size=15))))
    start, end = sorted(data.draw(st.tuples(st.integers(0, 70), st.integers(0, 70))))
    assert fmt._first_own_brace(braces, start, end, covered) == naive_first_own(
        braces, start, end, covered
    )
