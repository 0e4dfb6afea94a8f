"""Loads grammars/benchlang.lark (packaged as benchlang/_grammars in a wheel)."""

from __future__ import annotations

import functools
import gc
import hashlib
import importlib
import io
import os
import pickle
import sys
import types
from importlib import resources
from pathlib import Path
from typing import Any

import lark
from lark import Lark

_OPTIONS = {
    "parser": "lalr",
    "lexer": "basic",
    "propagate_positions": True,
    "maybe_placeholders": False,
}
_FORMAT = 2
"""The cache file's layout (1: Lark's own ``cache=``; 2: the built parser, pickled whole)."""


def grammar_text() -> str:
    packaged = resources.files("benchlang").joinpath("_grammars", "benchlang.lark")
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    return (Path(__file__).resolve().parents[2] / "grammars" / "benchlang.lark").read_text(
        encoding="utf-8"
    )


def cache_path(text: str) -> Path | None:
    """Where the built parser of this grammar is kept: the user's cache directory, keyed on
    the grammar text, the Lark and Python versions and the file's layout (a changed grammar
    never loads a stale parser). None when BENCHLANG_NO_CACHE is set or no cache directory
    can be made."""
    if os.environ.get("BENCHLANG_NO_CACHE"):
        return None
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "benchlang"
    tag = f"{_FORMAT}\0{lark.__version__}\0{sys.implementation.cache_tag}\0{_OPTIONS}\0{text}"
    key = hashlib.sha256(tag.encode()).hexdigest()[:20]
    try:
        base.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return base / f"grammar-{key}.pickle"


@functools.cache
def parser() -> Lark:
    """The LALR parser, loaded from the cache when there, else built and saved there.

    The cache holds the built parser pickled whole (its tables' actions shared, so the file
    is ~12,000 fewer objects): loading it takes 2-4 ms, where Lark's own ``cache=``
    deserialises every table entry and rule in Python (25-30 ms, docs/benchmarks.md), and
    building the tables about 0.1 s."""
    text = grammar_text()
    path = cache_path(text)
    if path is not None:
        collecting = gc.isenabled()
        gc.disable()  # ~4,000 new objects, none of them garbage: no collection passes
        try:
            loaded = pickle.loads(path.read_bytes())
        except Exception:  # none yet, or unreadable (damaged, foreign): rebuilt below
            loaded = None
        finally:
            if collecting:
                gc.enable()
        if isinstance(loaded, Lark):
            return loaded
    built = Lark(text, cache=False, **_OPTIONS)
    if path is not None:
        _save(built, path)
    return built


def _save(built: Lark, path: Path) -> None:
    """Write the parser where ``parser`` finds it, atomically (parallel first uses each write
    a whole file); a cache that cannot be written is skipped."""
    import tempfile

    _share_actions(built)
    data = io.BytesIO()
    _Pickler(data, protocol=pickle.HIGHEST_PROTOCOL).dump(built)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as out:
            out.write(data.getvalue())
        os.replace(tmp, path)
    except OSError:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def _share_actions(built: Lark) -> None:
    """One tuple per distinct (action, argument) of the LALR table (~700 for ~12,300
    entries): equal immutable values, fewer objects to load and free."""
    shared: dict[Any, Any] = {}
    for row in built.parser.parser._parse_table.states.values():
        for token, action in row.items():
            row[token] = shared.setdefault(action, action)


class _Pickler(pickle.Pickler):
    """Pickles a built ``Lark`` as its ``cache=`` would load it (without the source grammar's
    syntax trees, which parsing does not use): modules by name, the parse table's
    ``Shift``/``Reduce`` as the singletons the parser compares with ``is``, and each ``Rule``
    by its constructor, which computes the hash it keeps (string hashes change between
    processes)."""

    def reducer_override(self, obj: Any) -> Any:
        from lark.grammar import Rule
        from lark.parsers import lalr_analysis

        if type(obj) is Lark:
            return (
                object.__new__,
                (Lark,),
                {k: v for k, v in vars(obj).items() if k != "grammar"},
            )
        if isinstance(obj, types.ModuleType):
            return importlib.import_module, (obj.__name__,)
        if obj is lalr_analysis.Shift or obj is lalr_analysis.Reduce:
            return getattr, (lalr_analysis, obj.name)
        if type(obj) is Rule:
            return Rule, (obj.origin, obj.expansion, obj.order, obj.alias, obj.options)
        return NotImplemented


@functools.cache
def keyword_of_terminal() -> dict[str, str]:
    """Terminal name -> the keyword or symbol it stands for (e.g. SEED -> 'seed')."""
    out = {}
    for term in parser().terminals:
        if term.pattern.type == "str":
            out[term.name] = term.pattern.value
    return out
