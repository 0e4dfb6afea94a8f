"""``benchlang fmt``: the layout rules of docs/fmt.md on small specs, and the command itself
(``--check``, ``--diff``, stdin, refusing a spec with syntax errors as ``check`` does)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import attrs
import pytest

from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.format import comments_of, format_text
from benchlang.lang.syntax import decode

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "specs").glob("*.bench"))


def fmt(text: str) -> str:
    out = format_text(textwrap.dedent(text).lstrip("\n"))
    assert format_text(out) == out
    return out


def test_indentation_spacing_and_blank_lines():
    messy = """
        benchlang   1
        experiment x {   seed 7


          factor   n in [ 1,2 ,3 ]
              benchmark b { run "echo {n}"
          measure t=wall_time }
        metric t { unit "s"   better lower }
        design { runs 5
        }
        }
    """
    assert fmt(messy) == textwrap.dedent("""\
        benchlang 1
        experiment x {
          seed 7

          factor n in [1, 2, 3]
          benchmark b {
            run "echo {n}"
            measure t = wall_time
          }
          metric t { unit "s" better lower }
          design {
            runs 5
          }
        }
        """)


def test_tight_tokens_ranges_interactions_and_unary_minus():
    out = fmt("""
        benchlang 1
        experiment x {
          factor a in 1 .. 9 step 2
          factor b in [ "p" , "q" ]
          benchmark k { run "echo {a} {b}" measure t = wall_time }
          metric r = - t * ( t - 1 ) / - 2 { unit "s" }
          analysis { anova t ~ a * b + a : b }
        }
    """)
    assert "factor a in 1..9 step 2" in out
    assert 'factor b in ["p", "q"]' in out
    # "- 2" keeps its space: "-2" would be another token (a negative literal)
    assert 'metric r = -t * (t - 1) / - 2 { unit "s" }' in out
    assert "anova t ~ a * b + a:b" in out


def test_an_interaction_order_binds_tight_and_is_stable():
    spec = """
        benchlang 1
        experiment x {
          factor a in [1, 2]
          factor b in [1, 2]
          benchmark k { run "echo {a} {b}" measure t = wall_time }
          metric t { measure mean }
          analysis { anova t ~ ( a + b ) ^ 2 }
        }
    """
    out = fmt(spec)
    assert "anova t ~ (a + b)^2" in out

    def experiment(text: str):
        compiled = compile_source(decode("x.bench", text.encode()), ROOT)
        return attrs.evolve(compiled, spec_hash="")

    assert experiment(out) == experiment(textwrap.dedent(spec))


def test_a_long_list_is_wrapped_and_packed():
    levels = ", ".join(str(1000 + i) for i in range(40))
    out = fmt(f"benchlang 1\nexperiment x {{\n  factor n in [{levels}]\n}}\n")
    lines = out.splitlines()
    start = lines.index("  factor n in [")
    end = lines.index("  ]")
    packed = lines[start + 1 : end]
    assert all(line.startswith("    ") and line.endswith(",") for line in packed)
    assert all(len(line) <= 100 for line in packed) and len(packed) == 3
    assert ", ".join(line.strip().rstrip(",") for line in packed) == levels


def test_a_block_written_on_one_line_stays_on_one_line_only_if_it_fits():
    short = "benchlang 1\nexperiment x {\n  kpi t { percentile 50 confidence 95% }\n}\n"
    assert fmt(short) == short
    settings = " ".join(f"key{i} {i}" for i in range(20))
    out = fmt(f"benchlang 1\nexperiment x {{\n  design {{ {settings} }}\n}}\n")
    assert "  design {\n    key0 0\n    key1 1\n" in out


def test_comments_stay_where_they_belong():
    text = """
        # the file's first line
        benchlang 1

        # before the experiment
        experiment x {   # on the brace
          seed 7 # on seed
          # before the factor

          # after a blank line
          factor n in [1, # one
            2,
            # before three
            3]
          design { runs 5 } # on the design
          # last inside
        } # on the closing brace
        # at the end
    """
    out = fmt(text)
    assert comments_of(out) == comments_of(textwrap.dedent(text))
    assert out == textwrap.dedent("""\
        # the file's first line
        benchlang 1

        # before the experiment
        experiment x {  # on the brace
          seed 7        # on seed
          # before the factor

          # after a blank line
          factor n in [
            1,  # one
            2,
            # before three
            3,
          ]
          design { runs 5 }  # on the design
          # last inside
        }  # on the closing brace
        # at the end
        """)


def test_trailing_comments_of_neighbouring_lines_share_a_column():
    out = fmt("""
        benchlang 1
        experiment x {
          seed 7 # a
          title "longer" # b

          timeout 5m # c
        }
    """)
    assert '  seed 7          # a\n  title "longer"  # b\n\n  timeout 5m  # c\n' in out


def test_a_comment_inside_a_statement_breaks_it_and_indents_the_rest():
    out = fmt("benchlang 1\nexperiment x {\n  factor # why\n  n in [1]\n}\n")
    assert "  factor  # why\n    n in [1]\n" in out


def test_strings_are_kept_verbatim():
    script = 'run """python3 -c \'\nimport sys   \n  print(1)  # not a comment\n\'"""'
    text = f"benchlang 1\nexperiment x {{\n  benchmark b {{\n{script}\n  }}\n}}\n"
    out = fmt(text)
    assert "    " + script + "\n" in out
    assert comments_of(out) == []


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_the_shipped_specs_are_formatted(path):
    text = path.read_text(encoding="utf-8")
    assert format_text(text, str(path)) == text, f"run: benchlang fmt {path}"


def test_a_syntax_error_raises_the_diagnostics_of_check():
    with pytest.raises(SpecError) as err:
        format_text('benchlang 1\nexperiment x {\n  seed "7\n}\n', "bad.bench")
    assert str(err.value).startswith("bad.bench:3:8: error: unexpected character")


def test_the_command(cli_in_process, tmp_path):
    """--check names the files and exits 1; fmt rewrites them; a spec with a syntax error is
    refused with check's output and left as it was; --diff and stdin change nothing (the CLI
    in this process: statuses and both streams as a process gives them)."""

    def run_cli_many(calls):
        return [cli_in_process(args) for args in calls]

    messy = tmp_path / "messy.bench"
    messy.write_text("benchlang 1\nexperiment x {  seed 7 # s\n}\n")
    tidy = tmp_path / "tidy.bench"
    tidy.write_text("benchlang 1\nexperiment x {\n  seed 7\n}\n")
    bad = tmp_path / "bad.bench"
    bad_text = "benchlang 1\nexperiment x {\n  sed 7\n  seed\n}\n"
    bad.write_text(bad_text)
    checked, diffed, refused, checked_bad = run_cli_many(
        [
            ["fmt", "--check", messy, tidy],
            ["fmt", "--diff", messy],
            ["fmt", bad],
            ["check", bad],
        ]
    )
    assert checked[0] == 1 and f"{messy}: not formatted" in checked[2]
    assert str(tidy) not in checked[2]
    assert diffed[0] == 0 and "-experiment x {  seed 7 # s\n+experiment x {\n" in diffed[1]
    assert messy.read_text() == "benchlang 1\nexperiment x {  seed 7 # s\n}\n"
    assert refused[0] == checked_bad[0] == 2
    assert refused[2] == checked_bad[2] and "error" in refused[2]
    assert "Traceback" not in refused[2]
    assert bad.read_text() == bad_text
    done, again = run_cli_many([["fmt", messy, tidy], ["fmt", "--check", tidy]])
    assert done[0] == 0 and again[0] == 0
    assert messy.read_text() == "benchlang 1\nexperiment x {\n  seed 7  # s\n}\n"
    assert f"{messy}: formatted" in done[2] and str(tidy) not in done[2]


def test_standard_input(cli_in_process):
    status, out, _ = cli_in_process(["fmt", "-"], input=b"benchlang 1\nexperiment x { seed 7 }\n")
    assert status == 0 and out == "benchlang 1\nexperiment x {\n  seed 7\n}\n"


def test_fmt_loads_no_heavy_library():
    from tests.test_import_budget import loaded_by

    assert loaded_by("fmt", "--check", "specs/quickstart.bench")["heavy"] == []
