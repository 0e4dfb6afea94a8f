"""Loads grammars/benchlang.lark (packaged as benchlang/_grammars in a wheel)."""

from __future__ import annotations

import functools
from importlib import resources
from pathlib import Path

from lark import Lark


def grammar_text() -> str:
    packaged = resources.files("benchlang").joinpath("_grammars", "benchlang.lark")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammars" / "benchlang.lark").read_text(
        encoding="utf-8"
    )


@functools.cache
def parser() -> Lark:
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer="basic",
        propagate_positions=True,
        maybe_placeholders=False,
        cache=False,
    )


@functools.cache
def keyword_of_terminal() -> dict[str, str]:
    """Terminal name -> the keyword or symbol it stands for (e.g. SEED -> 'seed')."""
    out = {}
    for term in parser().terminals:
        if term.pattern.type == "str":
            out[term.name] = term.pattern.value
    return out
