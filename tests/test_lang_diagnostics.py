"""Spec diagnostics: ``path:line:col: error: message``, the source line, a caret, a hint.

Each case compiles a small spec in-process and checks the message, the position the caret
points at (by the text under it) and the hint; a few run the real CLI for the exit status.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from benchlang.backends.registry import backend_kinds
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode

HEAD = re.compile(r"^(?P<path>[^\n:]+):(?P<line>\d+):(?P<col>\d+): error: (?P<message>.+)$")

BASE = """
  factor n in [1, 2]
  benchmark b {
    run "echo {n}"
  }
  metric wall_time { measure mean }
"""


def spec(body: str, base: str = BASE) -> str:
    return f"benchlang 1\nexperiment t {{\n{textwrap.dedent(base)}{textwrap.dedent(body)}\n}}\n"


def errors_of(text: str, path: str = "t.bench") -> SpecError:
    with pytest.raises(SpecError) as info:
        compile_source(decode(path, text.encode()), backends=backend_kinds())
    return info.value


def blocks(err: SpecError) -> list[dict]:
    """Split the rendered text into diagnostics; check each has the compiler layout."""
    lines = str(err).split("\n")
    if re.fullmatch(r"\d+ errors", lines[-1]):
        assert int(lines[-1].split()[0]) == len(err.diagnostics)
        lines = lines[:-1]
    out = []
    for line in lines:
        head = HEAD.match(line)
        if head:
            out.append({**head.groupdict(), "rest": []})
        elif line.startswith(("t.bench:", "t.bench: ")) and ": warning: " in line:
            out.append({"warning": line, "rest": []})
        else:
            assert out, f"text before the first diagnostic: {line!r}"
            out[-1]["rest"].append(line)
    return [b for b in out if "warning" not in b]


def caret_text(text: str, block: dict) -> str:
    """The source text the caret (and its ~ run) points at, checked against the real line."""
    source_line, caret = block["rest"][0], block["rest"][1]
    line, col = int(block["line"]), int(block["col"])
    assert source_line == "  " + text.split("\n")[line - 1].rstrip("\r").replace("\t", " ")
    marks = re.fullmatch(r"  ( *)(\^~*)", caret)
    assert marks, caret
    assert len(marks.group(1)) == col - 1
    return source_line[2 + col - 1 : 2 + col - 1 + len(marks.group(2))]


def hint(block: dict) -> str | None:
    hints = [r for r in block["rest"] if r.startswith("  hint: ")]
    return hints[0][len("  hint: ") :] if hints else None


def single(text: str) -> tuple[dict, str]:
    err = errors_of(text)
    found = blocks(err)
    assert len(found) == 1, str(err)
    return found[0], caret_text(text, found[0])


def test_valid_base_compiles():
    experiment = compile_source(decode("t.bench", spec("").encode()))
    assert [f.name for f in experiment.factors] == ["n"]
    assert experiment.benchmarks[0].factors == ("n",)


@pytest.mark.parametrize(
    ("text", "message", "under"),
    [
        ('benchlang 1\nexperiment t {\n  benchmark b { run "x" \n', "unexpected end of file", None),
        ("benchlang 1\nexperiment t {\n  benchmark b { run 3 }\n}\n", "unexpected '3'", "3"),
        (
            'benchlang 1\nexperiment t {\n  benchmark b { run "x" } @\n}\n',
            "unexpected character '@'",
            "@",
        ),
        (
            'benchlang 1\nexperiment t {\n  seed "x"\n  benchmark b { run "x" }\n}\n',
            "unexpected '\"x\"'",
            '"x"',
        ),
    ],
)
def test_syntax_errors_are_positioned(text, message, under):
    block, pointed = single(text)
    assert block["message"] == message
    if under is not None:
        assert pointed == under


def test_unknown_keyword_gets_did_you_mean():
    text = spec("  desing { runs 3 }\n")
    block, pointed = single(text)
    assert block["message"] == "unexpected 'desing'"
    assert pointed == "desing"
    assert hint(block) == "did you mean 'design'?"


def test_unknown_setting_gets_did_you_mean():
    block, pointed = single(spec("  design { rnus 3 }\n"))
    assert block["message"] == "unknown setting 'rnus' in design"
    assert pointed == "rnus"
    assert hint(block) == "did you mean 'runs'?"


def test_unknown_builtin_measure():
    block, pointed = single(spec("", base='benchmark b { run "x" measure t = wall_tme }'))
    assert block["message"] == "unknown built-in measure 'wall_tme'"
    assert pointed == "wall_tme"
    assert hint(block) == "did you mean 'wall_time'?"


def test_kpi_on_undeclared_metric():
    block, pointed = single(spec("  kpi wall_tim { percentile 50 confidence 95% }\n"))
    assert block["message"] == "kpi on undeclared metric 'wall_tim'"
    assert pointed == "wall_tim"
    assert hint(block) == "did you mean 'wall_time'?"


def test_metric_on_undeclared_measure():
    block, pointed = single(spec("  metric lat { measure mean }\n"))
    assert block["message"] == "metric 'lat' refers to no measure named 'lat'"
    assert pointed == "lat"


@pytest.mark.parametrize("value", ["0", "100", "150", "-5"])
def test_percentile_outside_open_interval(value):
    block, pointed = single(spec(f"  kpi wall_time {{ percentile {value} confidence 95% }}\n"))
    assert "is outside (0, 100)" in block["message"]
    assert block["message"].startswith("percentile: percentile ")
    assert pointed == value


@pytest.mark.parametrize("value", ["0%", "100%", "250%"])
def test_confidence_outside_open_interval(value):
    block, pointed = single(spec(f"  kpi wall_time {{ percentile 50 confidence {value} }}\n"))
    assert block["message"] == f"confidence: {value} is outside (0%, 100%)"
    assert pointed == value


def test_metric_percentile_outside_open_interval():
    block, pointed = single(spec("  metric p { of wall_time measure percentile 100 }\n"))
    assert block["message"] == "percentile 100 is outside (0, 100)"
    assert pointed == "100"


@pytest.mark.parametrize(
    ("body", "message", "first_line"),
    [
        ("  factor n in [3]\n", "duplicate factor 'n'", 4),
        ('  benchmark b { run "y" }\n', "duplicate benchmark 'b'", 5),
        ("  metric wall_time { measure max }\n", "duplicate metric 'wall_time'", 8),
    ],
)
def test_duplicate_names(body, message, first_line):
    block, _ = single(spec(body))
    assert block["message"] == message
    assert hint(block) == f"first declared on line {first_line}"


def test_duplicate_measure_in_benchmark():
    block, pointed = single(
        spec("", base='benchmark b { run "x" measure t = wall_time measure t = user_time }')
    )
    assert block["message"] == "duplicate measure in benchmark b 't'"
    assert pointed == "t"


def test_undeclared_factor_in_command_template():
    block, pointed = single(
        spec("", base='factor size in [1, 2]\nbenchmark b { run "sort -S {sise} data" }')
    )
    assert block["message"] == "placeholder {sise} is not a declared factor"
    assert pointed == "{sise}"
    assert hint(block) == "did you mean 'size'?"


def test_runtime_placeholder_without_design_runtime():
    block, pointed = single(spec("", base='benchmark b { run "iperf -t {runtime}" }'))
    assert block["message"] == "placeholder {runtime} has no value"
    assert pointed == "{runtime}"
    assert "runtime 30s" in hint(block)


def test_runtime_placeholder_with_design_runtime_is_substituted():
    text = spec("  design { runtime 30s }\n", base='benchmark b { run "iperf -t {runtime}" }')
    experiment = compile_source(decode("t.bench", text.encode()))
    from benchlang.plan.configurations import configurations

    assert configurations(experiment)[0].command == "iperf -t 30"


def test_impossible_design_names_the_minimum():
    text = spec("  kpi wall_time { percentile 95 confidence 95% }\n  design { runs 3 }\n")
    block, pointed = single(text)
    assert "impossible design" in block["message"]
    assert block["message"].endswith("it needs at least 59")
    assert pointed == "runs"
    assert hint(block) == "use 'runs auto' or 'runs 59'"


def test_impossible_series_names_the_minimum():
    text = spec("  variability wall_time { percentile 25 confidence 75% }\n  design { series 2 }\n")
    block, _ = single(text)
    assert "impossible design: 2 series are too few" in block["message"]
    assert block["message"].endswith("it needs at least 5")


def test_several_errors_are_all_reported_in_source_order():
    text = spec(
        "  factor n in [3]\n"
        "  kpi nope { percentile 95 confidence 95% }\n"
        '  benchmark c { run "echo {m}" }\n'
        "  kpi wall_time { percentile 101 confidence 95% }\n"
    )
    err = errors_of(text)
    found = blocks(err)
    messages = [b["message"] for b in found]
    assert len(messages) == 4, messages
    assert "duplicate factor 'n'" in messages
    assert "kpi on undeclared metric 'nope'" in messages
    assert "placeholder {m} is not a declared factor" in messages
    assert any("percentile 101 is outside" in m for m in messages)
    positions = [(int(b["line"]), int(b["col"])) for b in found]
    assert positions == sorted(positions)
    assert str(err).splitlines()[-1] == "4 errors"


def test_several_syntax_errors_are_all_reported():
    text = (
        "benchlang 1\nexperiment t {\n"
        '  benchmark b { run "x" }\n'
        "  seed x\n"
        '  titel "a"\n'
        "  timeout 5\n"
        "}\n"
    )
    found = blocks(errors_of(text))
    assert [int(b["line"]) for b in found] == [4, 5, 6]


def test_unknown_order_hint():
    block, pointed = single(spec("  design { order randon }\n"))
    assert block["message"].startswith("order: expected one of fixed, random, fixed_vs_random")
    assert pointed == "randon"
    assert hint(block) == "did you mean 'random'?"


def test_unknown_hosts_kind_is_refused():
    block, pointed = single(spec("  hosts locl\n"))
    assert block["message"] == "no backend named 'locl' is installed"
    assert pointed == "locl"
    assert hint(block) == "did you mean 'local'?"


def test_unknown_hosts_kind_lists_installed_backends():
    block, _ = single(spec("  hosts quantum_cloud\n"))
    assert block["message"] == "no backend named 'quantum_cloud' is installed"
    assert "local" in hint(block)


def test_empty_and_binary_input():
    block, _ = single("   \n\n")
    assert block["message"] == "the spec is empty"
    with pytest.raises(SpecError) as info:
        decode("t.bench", b"benchlang 1\nexperiment \xff\xfe {")
    head = HEAD.match(str(info.value).splitlines()[0])
    assert head and head["message"] == "the file is not UTF-8 text"
    assert (head["line"], head["col"]) == ("2", "12")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("  factor n in 1..1e400\n", "a range needs finite bounds and step"),
        ("  factor n in 0..99999999999999999\n", "more than a plan can hold"),
        ("  factor n in [1e400]\n", "a factor level must be a finite number"),
        ("  seed 99999999999999999999999\n", "the seed must be below 2**63"),
        (
            "  design { runs 99999999999999999999 }\n",
            "the plan would have 199999999999999999998 trials",
        ),
        ("  kpi wall_time { percentile 50 confidence 95% exclude 99999999999 }\n", "at most 1000"),
        (
            "  kpi wall_time { percentile 0.0000001 confidence 99.9999% }\n",
            "more than benchlang plans",
        ),
    ],
)
def test_absurd_sizes_are_errors_not_crashes(body, message):
    """Huge ranges, runs or sizing inputs once raised MemoryError/OverflowError."""
    base = (
        BASE.replace("factor n in [1, 2]", "factor m in [1, 2]").replace("{n}", "{m}")
        if "factor n" in body
        else BASE
    )
    err = errors_of(spec(body, base))
    assert any(message in b["message"] for b in blocks(err)), str(err)


def test_cli_prints_diagnostics_and_exits_2(cli_in_process, tmp_path):
    text = spec("  kpi nope { percentile 95 confidence 95% }\n  desing { }\n")
    path = tmp_path / "bad.bench"
    path.write_text(text)
    status, out, err = cli_in_process(["check", path, tmp_path / "absent.bench"])
    assert status == 2
    assert "Traceback" not in err + out
    heads = [HEAD.match(line) for line in err.splitlines()]
    heads = [h for h in heads if h]
    assert heads and all(h["path"] == str(path) for h in heads)
    assert any(h["message"] == "unexpected 'desing'" for h in heads)
    assert "  hint: did you mean 'design'?" in err
    assert f"{tmp_path / 'absent.bench'}: error: cannot read the spec" in err


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('  env A = "x\\x00y"\n', "a string cannot contain a NUL character"),
        ('  factor f in ["\\ud800"]\n', "a string cannot contain a lone surrogate escape"),
    ],
)
def test_strings_that_no_process_can_receive(body, message):
    """NUL bytes and lone surrogates once crashed `run` in posix_spawn / SQLite."""
    err = errors_of(spec(body))
    assert message in [b["message"] for b in blocks(err)]


def test_unknown_escape_keeps_its_backslash_without_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        experiment = compile_source(
            decode("t.bench", spec("", base='benchmark b { run "echo a\\/b\\tc" }').encode())
        )
    assert experiment.benchmarks[0].command == "echo a\\/b\tc"


@pytest.mark.parametrize("odd", ["\x0c", "\u2028", "\x1c", "\x85", "\r"])
def test_caret_line_counts_only_newlines(odd):
    """Form feeds, U+2028 and the like are not line breaks to the parser; the shown line
    must be the one the position refers to (splitlines() once showed the wrong one)."""
    text = f'benchlang 1\n# a comment {odd} with an odd character\nexperiment t {{\n  seed "x"\n  benchmark b {{ run "x" }}\n}}\n'
    block, pointed = single(text)
    assert (block["line"], block["col"]) == ("4", "8")
    assert pointed == '"x"'


def test_crlf_line_endings():
    text = 'benchlang 1\r\nexperiment t {\r\n  seed "x"\r\n  benchmark b { run "x" }\r\n}\r\n'
    block, pointed = single(text)
    assert block["line"] == "3" and pointed == '"x"'


def test_a_factor_with_bad_levels_is_reported_once():
    """Its uses in commands are not reported again as undeclared factors."""
    text = spec("", base='factor n in []\nbenchmark b { run "echo {n}" }')
    block, pointed = single(text)
    assert block["message"] == "factor 'n' has no levels"
    assert pointed == "[]"
