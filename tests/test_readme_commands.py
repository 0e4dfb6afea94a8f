"""The README's two commands for a fresh machine: each makes a virtual
environment with the system's python3 (Debian's is externally managed, PEP 668), and CI's
`.ci/run` installs and tests exactly as the second one does, so a green CI proves the README."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    """The ``sh`` blocks between the README's first paragraph and its first section."""
    text = (ROOT / "README.md").read_text()
    top = text[: text.index("\n## ")]
    return [b.strip() for b in re.findall(r"```sh\n(.*?)```", top, flags=re.S)]


def steps(command: str) -> list[list[str]]:
    return [shlex.split(step) for step in command.split("&&")]


def ci_lines() -> list[list[str]]:
    out = []
    for line in (ROOT / ".ci/run").read_text().splitlines():
        line = line.split("  #")[0].strip()
        if line and not line.startswith("#"):
            out.append(shlex.split(line))
    return out


def test_exactly_two_commands_each_in_a_virtual_environment():
    first, second = readme_commands()
    for command in (first, second):
        assert steps(command)[0] == ["python3", "-m", "venv", ".venv"]
    assert steps(first)[-1] == [".venv/bin/benchlang", "run", "specs/quickstart.bench"]
    assert steps(first)[1][:4] == [".venv/bin/python3", "-m", "pip", "install"]


def test_ci_installs_and_tests_as_the_readme_says():
    _, second = readme_commands()
    _, activate, install, pytest = steps(second)
    assert activate == [".", ".venv/bin/activate"]
    lines = ci_lines()
    assert ["$system_python", "-m", "venv", ".venv"] in lines
    assert activate in lines
    assert install in [[w for w in line if w != "-q"] for line in lines]
    ran = [line for line in lines if line[:3] == ["python3", "-m", "pytest"] and "-n" in line]
    assert ran and all(w in ran[-1] for w in pytest[3:])


def test_ci_makes_the_environment_with_the_system_python():
    text = (ROOT / ".ci/run").read_text()
    assert "system_python=/usr/bin/python3" in text
    assert "python3-venv" in text  # Debian's package for `python3 -m venv`


def test_help_groups_every_command_once_and_the_readme_names_each(capsys):
    """`benchlang --help` shows the commands in groups; the README's table
    has the same groups, in order, and names every command; its docs list links every page."""
    from benchlang.cli import COMMANDS, GROUPS, main

    grouped = [name for names in GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(COMMANDS)
    assert main([]) == 2
    shown = capsys.readouterr().out
    at = [shown.index(f"{group.lower()}:\n") for group in GROUPS]
    assert at == sorted(at)
    for name in COMMANDS:
        assert re.search(rf"^  {re.escape(name)} +{re.escape(COMMANDS[name].help)}$", shown, re.M)
    readme = (ROOT / "README.md").read_text()
    table = readme[readme.index("## Commands") : readme.index("## Layout")]
    rows = [group.lower() for group in GROUPS]
    assert [m for m in re.findall(r"^\| \*\*(.+?)\*\* \|", table, re.M)] == rows
    named = re.findall(r"^\| `benchlang ([a-z-]+)", table, re.M)
    assert sorted(named) == sorted(COMMANDS)
    assert named == grouped  # the README lists them as --help does
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name}" in readme, f"README links no docs/{page.name}"


def test_a_store_is_positional_where_a_run_is_read(tmp_path, cli_in_process):
    """`analyze` and `record` take STORE [SPEC] in either order, as `report` and `results` do,
    with `--store` kept; a missing file or two stores are refused in one line, exit 2."""
    spec = tmp_path / "s.bench"
    spec.write_text(
        "benchlang 1\n\nexperiment s {\n  seed 1\n  factor n in [1, 2]\n"
        '  benchmark b {\n    run "echo t={n}"\n    measure t from stdout regex "t=([0-9]+)"\n  }\n'
        '  metric t { measure mean unit "s" }\n  kpi t { percentile 50 confidence 75% }\n  design { runs 3 }\n}\n'
    )
    store = tmp_path / "s.sqlite"
    status, _, err = cli_in_process(["run", spec, "--store", store, "-q"], cwd=tmp_path)
    assert status == 0, err
    outs = []
    for args in (["analyze", store, "--json"], ["analyze", spec, store, "--json"],
                 ["analyze", spec, "--store", store, "--json"]):  # fmt: skip
        status, out, err = cli_in_process(args, cwd=tmp_path)
        assert status == 0, err
        outs.append(out)
    assert outs[0] == outs[1] == outs[2]
    status, out, _ = cli_in_process(["record", store, "--format", "json"], cwd=tmp_path)
    assert status == 0 and '"kind": "benchlang.record"' in out
    for args, says in (
        (["analyze", tmp_path / "none.sqlite"], "none.sqlite: no such file"),
        (["analyze", store, store], "a store is given twice"),
        (["record", store, store], "reads one store and at most one spec"),
        (["record", spec], "s.bench is not an SQLite store"),
    ):
        status, out, err = cli_in_process(args, cwd=tmp_path)
        assert status == 2 and says in err and "Traceback" not in err, err


def test_every_argument_of_every_command_is_described():
    """`benchlang COMMAND --help` describes each argument."""
    import argparse

    from benchlang.cli import COMMANDS, build_parser

    top = build_parser()
    (commands,) = [a for a in top._actions if isinstance(a, argparse._SubParsersAction)]
    undescribed = []

    def walk(name: str, parser: argparse.ArgumentParser) -> None:
        parser.format_help()  # the lazy parser configures itself
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub, subparser in action.choices.items():
                    walk(f"{name} {sub}", subparser)
            elif action.help is None and action.dest != "help":
                undescribed.append(f"{name} {'/'.join(action.option_strings) or action.dest}")

    for name in COMMANDS:
        walk(name, commands.choices[name])
    assert not undescribed
