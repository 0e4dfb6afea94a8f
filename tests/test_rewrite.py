"""lang.rewrite: the hosts statement of a spec replaced, the rest of the text untouched."""

from __future__ import annotations

from benchlang.lang.rewrite import replace_hosts

SPEC = """benchlang 1
# hosts in a comment stays
experiment e {
  title "hosts { here } too"
  hosts ssh { nodes ["a}", "b"]  # a } in a comment
              user "u" }
  seed 1
  benchmark b { run "true" }
}
"""


def test_the_whole_statement_is_replaced_and_nothing_else():
    out = replace_hosts(SPEC, "local { slots 2 }")
    assert out == SPEC.replace(
        'hosts ssh { nodes ["a}", "b"]  # a } in a comment\n              user "u" }',
        "hosts local { slots 2 }",
    )


def test_a_statement_without_settings_and_a_spec_without_hosts():
    short = SPEC.replace(
        'hosts ssh { nodes ["a}", "b"]  # a } in a comment\n              user "u" }', "hosts local"
    )
    assert replace_hosts(short, 'ssh { nodes ["x"] }').count('hosts ssh { nodes ["x"] }') == 1
    bare = 'benchlang 1\nexperiment e {\n  seed 1\n  benchmark b { run "true" }\n}\n'
    assert replace_hosts(bare, "local") == bare.replace("e {\n", "e {\n  hosts local\n", 1)
