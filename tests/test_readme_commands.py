"""The README's two commands for a fresh machine (issue 51 item 0): each makes a virtual
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
