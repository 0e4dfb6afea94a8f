"""No input, however malformed, makes the compiler raise anything but SpecError.

Hypothesis feeds arbitrary text, arbitrary bytes, token soups over the language's own
vocabulary, and mutations (deleted, inserted, duplicated, replaced tokens) of valid specs:
100 inputs a test in the suite, 2,000 under ``BENCHLANG_FUZZ=full`` (tests/fuzz_budget.py).
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.grammar import keyword_of_terminal
from benchlang.lang.syntax import decode
from tests.conftest import cli_here
from tests.fuzz_budget import cases

ROOT = Path(__file__).resolve().parents[1]
SEEDS = sorted((ROOT / "specs").glob("*.bench")) + sorted(
    (Path(__file__).parent / "specs").glob("*.bench")
)
SEED_TEXTS = [p.read_text(encoding="utf-8") for p in SEEDS]
TOKEN = re.compile(r'"""(?:.|\n)*?"""|"(?:[^"\\\n]|\\.)*"|\s+|[^\s"]+')
PIECES = sorted({t for text in SEED_TEXTS for t in TOKEN.findall(text) if not t.isspace()})
ODD = [
    "{",
    "}",
    "[",
    "]",
    "(",
    ")",
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
    "99999999999999999999",
    "1e999s",
    "0.0000001",
    "auto",
    "\x00",
    "é",
    "\t",
    "\n",
    "#",
    "{{",
    "}}",
    '"{x}"',
    '"{runtime}"',
    '"{"',
    "step 0",
    "in",
    "from",
    "series",
    "hidden",
    "coverage 0%",
]
VOCAB = sorted(
    {*keyword_of_terminal().values(), *ODD, "x", "n", '"s"', "1", "2.5", "95%", "30s", "1..3"}
)
SETTINGS = settings(
    max_examples=cases(100, 2000), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def compile_or_spec_error(data: bytes) -> None:
    try:
        compile_source(decode("fuzz.bench", data))
    except SpecError as err:
        text = str(err)
        assert text.startswith("fuzz.bench")
        assert all(d.severity in ("error", "warning") for d in err.diagnostics)
        assert any(d.severity == "error" for d in err.diagnostics)


def test_seed_specs_are_valid():
    assert SEED_TEXTS
    for path, text in zip(SEEDS, SEED_TEXTS, strict=True):
        compile_source(decode(str(path), text.encode()), base_dir=path.parent)


@SETTINGS
@given(st.text(max_size=400))
def test_arbitrary_text(text):
    compile_or_spec_error(text.encode("utf-8", errors="surrogatepass"))


@SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes(data):
    compile_or_spec_error(data)


@SETTINGS
@given(st.binary(max_size=60), st.sampled_from(range(len(SEED_TEXTS))), st.floats(0, 1))
def test_bytes_spliced_into_a_valid_spec(junk, which, where):
    data = SEED_TEXTS[which].encode()
    cut = int(where * len(data))
    compile_or_spec_error(data[:cut] + junk + data[cut:])


@SETTINGS
@given(st.lists(st.sampled_from(VOCAB), max_size=60))
def test_token_soup_inside_an_experiment(tokens):
    body = " ".join(tokens)
    compile_or_spec_error(f"benchlang 1\nexperiment x {{\n{body}\n}}\n".encode())


MUTATION = st.tuples(
    st.sampled_from(["delete", "insert", "duplicate", "replace"]),
    st.floats(0, 1),
    st.sampled_from(PIECES + ODD),
)


def mutate(which: int, mutations: list) -> str:
    """Seed spec ``which`` with MUTATION's tokens deleted, inserted, doubled or replaced (the
    LSP's fuzz and incremental tests apply the same edits)."""
    tokens = TOKEN.findall(SEED_TEXTS[which])
    for op, where, piece in mutations:
        i = min(int(where * len(tokens)), len(tokens) - 1)
        if op == "delete" and len(tokens) > 1:
            del tokens[i]
        elif op == "insert":
            tokens.insert(i, f" {piece} ")
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
        else:
            tokens[i] = piece
    return "".join(tokens)


@SETTINGS
@given(st.sampled_from(range(len(SEED_TEXTS))), st.lists(MUTATION, min_size=1, max_size=5))
def test_mutated_valid_specs(which, mutations):
    compile_or_spec_error(mutate(which, mutations).encode())


def test_cli_never_shows_a_traceback(tmp_path):
    """Random inputs through the real CLI (in this process: what is tested is the command's
    answer, not a process): exit 2 with diagnostics, never a traceback."""
    rng = random.Random(2024)
    paths = []
    for i in range(6):
        if i % 3 == 0:
            data = rng.randbytes(200)
        elif i % 3 == 1:
            data = " ".join(rng.choice(VOCAB) for _ in range(40)).encode()
        else:
            # without its comments, so that the garbage always lands in code
            tokens = TOKEN.findall(re.sub(r"(?m)^\s*#.*$", "", rng.choice(SEED_TEXTS)))
            for _ in range(4):
                del tokens[rng.randrange(len(tokens))]
            tokens.insert(rng.randrange(len(tokens)), "}}} {{ \x00 ")
            data = "".join(tokens).encode()
        path = tmp_path / f"random{i}.bench"
        path.write_bytes(data)
        paths.append(path)
    (status, out, err), *others = (
        cli_here(args, cwd=tmp_path)
        for args in (
            ["check", *paths],
            ["plan", paths[1]],
            ["run", paths[2], "--store", "s.sqlite"],
        )
    )
    assert status == 2
    assert "Traceback" not in out + err
    for path in paths:
        assert f"{path}:" in err
    for status, out, err in others:
        assert status == 2
        assert "Traceback" not in out + err
    assert not (tmp_path / "s.sqlite").exists()
