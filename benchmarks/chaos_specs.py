"""Chaos test of ``benchlang check``: no spec, however broken, may end in a traceback.

Feeds 10,000 specs (token mutations of specs/*.bench, plus pathological inputs: deep nesting,
huge numbers, huge strings) through ``benchlang check`` in-process (``benchlang.cli.main``, the
same code path as the command) and prints how many ended in an exception other than a
diagnostic (must be 0), then the time and peak memory of checking a spec holding a 1 MB string.

    python3 benchmarks/chaos_specs.py [--count 10000] [--seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import sys
import tempfile
import time
import traceback
import tracemalloc
from collections import Counter
from pathlib import Path

from benchlang.cli import main

ROOT = Path(__file__).resolve().parents[1]
TOKEN = re.compile(r'"""(?:.|\n)*?"""|"(?:[^"\\\n]|\\.)*"|\s+|[^\s"]+')
MINIMAL = 'benchlang 1\nexperiment e {\n  benchmark b { run "true" }\n%s\n}\n'


def pathological() -> list[str]:
    """Inputs that once raised (RecursionError, int-str limit, OverflowError) or ran slowly."""
    nines = "9" * 400
    digits = "1" * 5000
    out = [
        MINIMAL % ("  factor n in " + "[" * 490 + "1" + "]" * 490),
        MINIMAL % ("  factor n in " + "[" * 5000 + "1" + "]" * 5000),
        MINIMAL % ("  factor n in " + "[" * 490),
        MINIMAL % ("  design { layout fully_balanced " + "{ x " * 490 + "}" * 490 + " }"),
        MINIMAL % ("  hosts ssh " + "{ a " * 600 + "}" * 600),
        MINIMAL % f"  seed {digits}",
        MINIMAL % f"  factor n in [{digits}]",
        MINIMAL % f"  factor n in [-{digits}]",
        MINIMAL % f"  factor n in 1..{digits}",
        MINIMAL % f"  factor n in [1.{digits}]",
        MINIMAL % f"  factor n in [1] coverage {nines}%",
        MINIMAL % f"  factor n in [1] coverage {digits}%",
        MINIMAL % f"  kpi wall_time {{ percentile {nines} confidence {nines}% }}",
        MINIMAL % f"  design {{ runs {digits} }}",
        MINIMAL % f"  timeout {digits}s",
        MINIMAL % f"  timeout {nines}.5d",
        MINIMAL % f"  design {{ runtime {digits}ms span {nines}w }}",
        MINIMAL % f"  stop after {digits}",
        MINIMAL % f"  stop when kpi wall_time width {nines}% max {digits}",
        MINIMAL % f"  metric wall_time {{ measure percentile {nines} trim {nines}% }}",
        MINIMAL % f"  env X = {digits}",
        MINIMAL % '  factor p in ["' + "{" * 3000 + '"]',
        MINIMAL % ('  benchmark c { run "' + "{x}" * 3000 + '" }'),
        MINIMAL % ('  setup "' + "\\x" * 3000 + '"'),
        MINIMAL % ('  title "' + "a" * 100_000 + '"'),
        MINIMAL % ("  title " + '"' * 7),
        "benchlang 1\n" * 5000,
        "{" * 100_000,
        "experiment e {" * 3000,
        "\x00" * 1000,
    ]
    return out


def mutate(rng: random.Random, texts: list[str], pieces: list[str], odd: list[str]) -> str:
    """A seed spec with 1-4 token-level mutations (delete, duplicate, insert, replace, nest)."""
    tokens = TOKEN.findall(rng.choice(texts))
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(tokens)) if tokens else 0
        op = rng.randrange(6)
        if op == 0 and tokens:
            del tokens[i]
        elif op == 1 and tokens:
            tokens.insert(i, tokens[i])
        elif op == 2:
            tokens.insert(i, " " + rng.choice(pieces) + " ")
        elif op == 3 and tokens:
            tokens[i] = rng.choice(odd)
        elif op == 4:
            depth = rng.choice((10, 100, 490, 1200))
            tokens.insert(i, " " + "[" * depth + "1" + "]" * rng.choice((0, depth)) + " ")
        else:
            tokens.insert(i, " " + rng.choice(odd) + " ")
    return "".join(tokens)


ODD = [
    "{",
    "}",
    "[",
    "]",
    '"',
    '"""',
    "..",
    "%",
    "=",
    "~",
    "*",
    ",",
    "-1",
    "0",
    "1e400",
    "1e-400",
    "9" * 400,
    "9" * 400 + "%",
    "1" * 5000,
    "1e999s",
    "-0",
    "nan",
    "inf",
    "auto",
    "\x00",
    "é",
    "\t",
    "\r",
    "\f",
    "\u2028",
    "#",
    "{{",
    "}}",
    '"{x}"',
    '"{runtime}"',
    '"{"',
    '"$(touch pwned)"',
    '"\\"{x}\\""',
    "step 0",
    "coverage 0%",
    "hidden",
    "code",
]


def check_one(path: Path) -> str | None:
    """Run ``benchlang check PATH`` in-process; the traceback text if it raised."""
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["check", str(path)])
    except BaseException:
        return traceback.format_exc()
    if status not in (0, 2):
        return f"exit status {status}\n{err.getvalue()}"
    return None


def one_megabyte(directory: Path) -> tuple[float, float]:
    """(seconds, peak MB) of checking a spec whose title is a 1 MB string."""
    path = directory / "big.bench"
    path.write_text(MINIMAL % ('  title "' + "a" * 1_000_000 + '"'), encoding="utf-8")
    tracemalloc.start()
    start = time.perf_counter()
    problem = check_one(path)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 1e6
    tracemalloc.stop()
    if problem:
        print(problem, file=sys.stderr)
    return seconds, peak


def run(count: int, seed: int) -> int:
    """Fuzz ``count`` specs; print the traceback count; return it."""
    rng = random.Random(seed)
    texts = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "specs").glob("*.bench"))]
    pieces = sorted({t for text in texts for t in TOKEN.findall(text) if not t.isspace()})
    specs = pathological()
    while len(specs) < count:
        specs.append(mutate(rng, texts, pieces, ODD))
    failures: Counter[str] = Counter()
    example: dict[str, str] = {}
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        for n, text in enumerate(specs):
            path = directory / f"s{n % 10}.bench"
            path.write_bytes(text.encode("utf-8", errors="surrogatepass"))
            problem = check_one(path)
            if problem:
                kind = problem.strip().splitlines()[-1][:120]
                failures[kind] += 1
                example.setdefault(kind, problem)
        elapsed = time.perf_counter() - start
        seconds, peak = one_megabyte(directory)
    for kind, n in failures.most_common():
        print(f"{n:6d}  {kind}")
        print("        " + example[kind].strip().splitlines()[-3][:200])
    print(f"specs checked: {len(specs)} in {elapsed:.1f} s")
    print(f"tracebacks: {sum(failures.values())}")
    print(f"1 MB string literal: {seconds:.2f} s, peak {peak:.0f} MB (tracemalloc)")
    return sum(failures.values())


def cli() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    return 1 if run(args.count, args.seed) else 0


if __name__ == "__main__":
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    raise SystemExit(cli())
