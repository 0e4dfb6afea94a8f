"""The import-linter contracts cover the whole package: every command of the CLI's table is in
the independence contract, and every package of the stack is in the layers contract
(pyproject.toml; docs/architecture.md, "Contracts"). A command added without a contract line
would be free to import another command."""

from __future__ import annotations

import pkgutil
import tomllib
from pathlib import Path

import benchlang
from benchlang.cli import COMMANDS

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def contracts() -> dict[str, dict]:
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    return {c["type"]: c for c in data["tool"]["importlinter"]["contracts"]}


def test_every_command_module_is_in_the_independence_contract():
    commands = {command.module for command in COMMANDS.values()}
    listed = set(contracts()["independence"]["modules"])
    assert commands, "the CLI's table of commands is empty"
    assert commands - listed == set(), "commands outside the independence contract"
    assert listed - commands == set(), "contract lines naming no command"


def test_every_package_of_the_stack_is_a_layer():
    layers = {
        name.strip() for layer in contracts()["layers"]["layers"] for name in layer.split("|")
    }
    beside = {"benchlang.testing", "benchlang._native", "benchlang.__main__"}
    modules = {f"benchlang.{m.name}" for m in pkgutil.iter_modules(benchlang.__path__)} - beside
    assert modules - layers == set(), "packages in no layer"
