"""A ``{placeholder}`` is one literal word in every shell context, proven through /bin/sh.

Each command writes the placeholder's value to a file with ``printf %s``; the file must hold
exactly the level's text, and a marker file that a hostile level tries to create must not exist.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlang.lang.check import check_source
from benchlang.lang.diagnostics import Source, SpecError
from benchlang.lang.shell import UnsafePlaceholder, parse_template
from benchlang.plan.configurations import configurations, substitute

# {out} is the output file (a plain path); {p} the hostile level. Every context the lexer quotes.
CONTEXTS = {
    "unquoted": "printf %s {p} > {out}",
    "double": 'printf %s "{p}" > {out}',
    "single": "printf %s '{p}' > {out}",
    "double_joined": 'printf %s "<{p}>" > {out}',
    "single_joined": "printf %s '<'{p}'>' > {out}",
    "dollar": 'printf %s "$(printf %s {p})" > {out}',
    "dollar_double": 'printf %s "$(printf %s "{p}")" > {out}',
    "dollar_single": "printf %s \"$(printf %s '{p}')\" > {out}",
    "backquotes": 'x=`printf %s {p}`; printf %s "$x" > {out}',
    "backquotes_double": 'x=`printf %s "{p}"`; printf %s "$x" > {out}',
    "backquotes_single": "x=`printf %s '{p}'`; printf %s \"$x\" > {out}",
    "nested": 'printf %s "$(printf %s "$(printf %s \'{p}\')")" > {out}',
}
WRAP = {"double_joined": ("<", ">"), "single_joined": ("<", ">")}
HOSTILE = st.text(
    alphabet=st.sampled_from(list("'\"$`\\\n;&|(){}<>*?~# \tab-=%!")), min_size=1, max_size=30
) | st.sampled_from(
    [
        "$(touch {marker})",
        "`touch {marker}`",
        "'; touch {marker}; '",
        '"; touch {marker}; "',
        "\\'$(touch {marker})\\'",
        "$(touch {marker})\\",
        "x\ntouch {marker}\n",
        '\\"`touch {marker}`',
        "'\"'\"'$(touch {marker})",
    ]
)


def run_sh(command: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, timeout=10)


@pytest.mark.parametrize("context", sorted(CONTEXTS))
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(raw=HOSTILE)
def test_a_hostile_level_is_one_literal_word(tmp_path, context, raw):
    marker = tmp_path / "pwned"
    out = tmp_path / "out.txt"
    level = raw.replace("{marker}", str(marker))
    template = CONTEXTS[context].replace("{out}", str(out))
    command = substitute(template, {"p": level})
    result = run_sh(command, tmp_path)
    assert not marker.exists(), command
    assert result.returncode == 0, (command, result.stderr)
    before, after = WRAP.get(context, ("", ""))
    got = out.read_bytes().decode()
    # $(...) and `...` drop trailing newlines of their output: that is the shell, not quoting
    want = before + level + after
    if context.startswith(("dollar", "backquotes", "nested")):
        want = want.rstrip("\n")
    assert got == want, command
    out.unlink()


def test_plain_levels_are_quoted_as_before():
    """Plain levels (the specs in specs/) expand exactly as shlex.quote did: plans keep hashes."""
    for template, value, want in [
        ("{tool} -{level} -c f", "xz", "xz -6 -c f"),
        ("sh -c 'case {task} in a) :;; esac'", "produce", "sh -c 'case produce in a) :;; esac'"),
        ('echo "{n}"', 3, 'echo "3"'),
        ("echo {n}", 6.0, "echo 6.0"),
        ("echo {p}", "a b", "echo 'a b'"),
    ]:
        assert (
            substitute(template, {"tool": value, "level": 6, "task": value, "n": value, "p": value})
            == want
        )


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("echo \\{p}", "follows a backslash"),
        ('echo "\\{p}"', "follows a backslash"),
        ("echo ${p}", "follows a '$'"),
        ('echo "${p}"', "follows a '$'"),
        ("echo hi # {p}", "inside a shell comment"),
        ("cat <<E\n{p}\nE", "inside a here-document"),
        ("echo ${{X:-{p}}}", "inside ${...}"),
        ("echo $'{p}'", "inside $'...'"),
        ('echo "`echo {p}`"', "backquotes within double quotes"),
        ("echo $(case x in a) echo {p};; esac)", "follows 'case'"),
        ('echo "{p!code}"', "must stand unquoted"),
    ],
)
def test_contexts_that_cannot_be_made_safe_are_refused(template, problem):
    (ph,) = parse_template(template).placeholders
    assert ph.problem is not None and problem in ph.problem
    with pytest.raises(UnsafePlaceholder):
        substitute(template, {"p": "x"})


SPEC = 'benchlang 1\nexperiment e {{\n  factor p in {levels}\n  benchmark b {{ run "{run}" }}\n}}\n'


def compile_warnings(levels: str, run: str) -> list[str]:
    compiled = check_source(Source("t.bench", SPEC.format(levels=levels, run=run)))
    return [w.message for w in compiled.warnings]


def test_check_points_at_an_unsafe_placeholder_with_a_hint():
    with pytest.raises(SpecError) as info:
        check_source(Source("t.bench", SPEC.format(levels='["a"]', run="echo ${p}")))
    (error,) = info.value.diagnostics
    assert (
        error.message
        == "placeholder {p} follows a '$', which would join the level into an expansion"
    )
    assert (error.span.line, error.span.column, error.span.end_column) == (
        4,
        28,
        31,
    )  # the {p} after the $
    assert "one literal word" in error.hint


def test_command_levels_in_program_position_warn_and_point_to_code():
    found = compile_warnings('["gzip -6", "xz -6"]', "{p} f")
    assert any("'gzip -6' has a space" in w for w in found), found
    assert not any(
        "has a space" in w for w in compile_warnings('["gzip -6", "xz -6"]', "{p!code} f")
    )


def test_code_levels_run_as_commands(tmp_path):
    compiled = check_source(
        Source(
            "t.bench", SPEC.format(levels='["printf %s a", "printf %s b"]', run="{p!code} > out")
        )
    )
    commands = [c.command for c in configurations(compiled.experiment)]
    assert commands == ["printf %s a > out", "printf %s b > out"]
    for command, want in zip(commands, "ab", strict=True):
        assert run_sh(command, tmp_path).returncode == 0
        assert (tmp_path / "out").read_text() == want


def test_missing_program_on_local_hosts_is_a_warning():
    assert "program 'no-such-program-xyz' is not found on PATH" in compile_warnings(
        '["a"]', "no-such-program-xyz {p}"
    )
    assert "program 'no-such-tool-q' is not found on PATH" in compile_warnings(
        '["no-such-tool-q -1"]', "{p!code}"
    )
    assert not [w for w in compile_warnings('["a"]', "echo {p}") if "PATH" in w]
    assert not [w for w in compile_warnings('["a"]', "./build/bench {p}") if "PATH" in w]


def test_arithmetic_needs_numeric_levels():
    with pytest.raises(SpecError) as info:
        check_source(Source("t.bench", SPEC.format(levels='["1; x"]', run="echo $(( {p} + 1 ))")))
    assert "is not a number" in info.value.diagnostics[0].message
    compiled = check_source(
        Source("t.bench", SPEC.format(levels="[1, 2]", run="echo $(( {p} + 1 ))"))
    )
    assert [c.command for c in configurations(compiled.experiment)] == [
        "echo $(( 1 + 1 ))",
        "echo $(( 2 + 1 ))",
    ]
