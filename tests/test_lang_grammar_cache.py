"""The LALR tables are loaded from a cache keyed on the grammar, and a broken cache file is
rebuilt instead of failing."""

from __future__ import annotations

import os
import subprocess
import sys

from benchlang.lang.grammar import cache_path, grammar_text

PARSE = (
    "from benchlang.lang.check import compile_source\n"
    "from benchlang.lang.diagnostics import Source\n"
    "e = compile_source(Source('t', 'benchlang 1\\nexperiment e { benchmark b { run \"true\" } }'))\n"
    "print(e.name)\n"
)


def run_fresh(env: dict) -> str:
    done = subprocess.run(
        [sys.executable, "-c", PARSE], env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_cache_is_written_then_used_and_a_corrupt_file_is_rebuilt(tmp_path, monkeypatch):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("BENCHLANG_NO_CACHE", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("BENCHLANG_NO_CACHE", raising=False)
    path = cache_path(grammar_text())
    assert path is not None and path.parent == tmp_path / "benchlang"
    assert run_fresh(env) == "e"
    assert path.is_file() and path.stat().st_size > 1000
    assert run_fresh(env) == "e"  # from the cache
    path.write_bytes(b"not a pickle")
    assert run_fresh(env) == "e"  # rebuilt
    assert path.stat().st_size > 1000


def test_the_key_changes_with_the_grammar(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("BENCHLANG_NO_CACHE", raising=False)
    assert cache_path("a: 'x'") != cache_path("a: 'y'")
    monkeypatch.setenv("BENCHLANG_NO_CACHE", "1")
    assert cache_path("a: 'x'") is None
