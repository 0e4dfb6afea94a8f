"""Loads grammars/benchlang.lark (packaged as benchlang/_grammars in a wheel)."""

from __future__ import annotations

import functools
import hashlib
import os
from importlib import resources
from pathlib import Path

import lark
from lark import Lark


def grammar_text() -> str:
    packaged = resources.files("benchlang").joinpath("_grammars", "benchlang.lark")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammars" / "benchlang.lark").read_text(
        encoding="utf-8"
    )


def cache_path(text: str) -> Path | None:
    """Where the built LALR tables of this grammar are kept: the user's cache directory, keyed
    on the grammar text and the Lark version (a changed grammar never loads stale tables).
    None when BENCHLANG_NO_CACHE is set or no cache directory can be made."""
    if os.environ.get("BENCHLANG_NO_CACHE"):
        return None
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "benchlang"
    key = hashlib.sha256(f"{lark.__version__}\0{text}".encode()).hexdigest()[:20]
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return base / f"grammar-{key}.lark"


@functools.cache
def parser() -> Lark:
    """The LALR parser, loaded from the cache when there (building the tables costs about
    as much as the rest of ``benchlang check``), else built and saved there."""
    text = grammar_text()
    path = cache_path(text)
    options = {
        "parser": "lalr",
        "lexer": "basic",
        "propagate_positions": True,
        "maybe_placeholders": False,
    }
    if path is not None:
        try:
            return Lark(text, cache=str(path), **options)
        except (OSError, EOFError, ValueError, TypeError, AttributeError):
            path.unlink(missing_ok=True)  # unreadable or foreign file: rebuild without cache
    return Lark(text, cache=False, **options)


@functools.cache
def keyword_of_terminal() -> dict[str, str]:
    """Terminal name -> the keyword or symbol it stands for (e.g. SEED -> 'seed')."""
    out = {}
    for term in parser().terminals:
        if term.pattern.type == "str":
            out[term.name] = term.pattern.value
    return out
