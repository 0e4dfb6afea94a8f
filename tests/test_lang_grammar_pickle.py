"""The parser kept in the cache (lang/grammar.py: the built ``Lark`` pickled whole) parses and
recovers exactly as a parser built from the grammar does, in a process whose string hashes
differ from those of the process that wrote it (the rules' hashes are recomputed on load)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PARSE_ALL = """
import json
from pathlib import Path
from benchlang.lang.check import check_source
from benchlang.lang.diagnostics import Source, SpecError
from benchlang.lang.grammar import cache_path, grammar_text, parser
out = []
for path in sorted(Path("specs").glob("*.bench")) + sorted(Path("tests/specs").glob("*.bench")):
    text = path.read_text(encoding="utf-8")
    out.append(parser().parse(text).pretty())
    for cut in (len(text) // 3, len(text) // 2, 2 * len(text) // 3):
        for broken in (text[:cut], text[:cut] + " desing { runs x } }", text[:cut] + text[cut + 9:]):
            try:
                check_source(Source(str(path), broken), Path("specs"))
                out.append("ok")
            except SpecError as err:
                out.append(str(err))
path = cache_path(grammar_text())
print(json.dumps({"out": out, "cached": path is not None and path.is_file()}))
"""


def parse_all(env: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", PARSE_ALL],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_cached_parser_parses_and_recovers_as_a_built_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "BENCHLANG_NO_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    built = parse_all({**env, "BENCHLANG_NO_CACHE": "1", "PYTHONHASHSEED": "3"})
    writer = parse_all({**env, "PYTHONHASHSEED": "1"})  # builds, then writes the cache
    reader = parse_all({**env, "PYTHONHASHSEED": "2"})  # loads it
    assert not built["cached"] and writer["cached"] and reader["cached"]
    assert len(built["out"]) > 100 and any("error" in o for o in built["out"])
    assert reader["out"] == built["out"]
    assert writer["out"] == built["out"]
    assert [p.suffix for p in (tmp_path / "benchlang").iterdir()] == [".pickle"]
