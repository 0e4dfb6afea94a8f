"""Every third-party package the code of ``benchlang/`` imports is declared in pyproject.toml:
in ``dependencies`` when a command of the base install imports it, else in an extra
(docs/install.md). A package that only came along with another (pandas and patsy with
statsmodels) is a missing declaration."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BASE_ONLY = {"benchlang/stats", "benchlang/lang", "benchlang/design", "benchlang/run"}
"""Code every command may import: what it imports must be in ``dependencies``, not an extra."""


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _imports() -> dict[str, set[str]]:
    """Top-level module -> the files of benchlang/ importing it (absolute imports)."""
    found: dict[str, set[str]] = {}
    for path in (ROOT / "benchlang").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                found.setdefault(name.split(".")[0], set()).add(path.relative_to(ROOT).as_posix())
    return found


def test_every_imported_package_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    base = {_name(r) for r in project["dependencies"]}
    extras = {_name(r) for group in project["optional-dependencies"].values() for r in group}
    providers = metadata.packages_distributions()
    undeclared, base_needs = [], []
    for module, files in sorted(_imports().items()):
        if module in sys.stdlib_module_names or module == "benchlang":
            continue
        dists = {_name(d) for d in providers.get(module, [module])}
        if not dists & (base | extras):
            undeclared.append(f"{module} ({', '.join(sorted(files))})")
        elif not dists & base:
            base_needs += [f"{module}: {f}" for f in files if f.rsplit("/", 1)[0] in BASE_ONLY]
    assert undeclared == []
    assert base_needs == []
