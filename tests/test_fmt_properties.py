"""Properties of ``benchlang fmt`` over every spec in specs/ and tests/specs/ and
thousands of generated ones, each laid out at random (any whitespace between tokens, comments
at any token boundary, on their own lines or after code):

- ``fmt(x)`` compiles to the plan of ``x`` (all of it but ``spec_hash`` and ``hash``, which
  cover the spec's text by design); in the many-layouts test, to the same tokens (which the
  parser turns into the same plan: cheaper, so thousands of layouts fit);
- ``fmt(fmt(x)) == fmt(x)``;
- no comment is lost or changed (the comment texts, in order);
- every line fits in 100 columns unless a single word, string or comment is longer.

The suite tries a few seeded layouts of each shipped spec and a few dozen generated specs;
``BENCHLANG_FUZZ=full`` (benchmarks/fuzz_full.py) tries thousands (tests/fuzz_budget.py).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchlang.app.spec import open_backend_in
from benchlang.lang.check import compile_source
from benchlang.lang.format import _lex, _signature, comments_of, format_text
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan
from tests.fuzz_budget import cases

ROOT = Path(__file__).resolve().parents[1]
SPECS = sorted((ROOT / "specs").glob("*.bench")) + sorted((ROOT / "tests/specs").glob("*.bench"))
TEXTS = {p: p.read_text(encoding="utf-8") for p in SPECS}
GAPS = [" ", " ", " ", "  ", "\t", "\n", "\n", "\n\n", "\n\n\n", "\n      ", " \n \n "]
PROPERTIES = settings(
    max_examples=cases(30, 300),
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
EACH_SPEC = settings(PROPERTIES, max_examples=cases(4, 40))
MANY = settings(PROPERTIES, max_examples=cases(60, 2000))


def relayout(text: str, rnd: random.Random, comments: float) -> str:
    """``text`` with the same tokens, random whitespace between them and, at a random share
    of the token boundaries, a new comment (on its own line or after the code before it)."""
    out: list[str] = []
    count = 0
    tokens = _lex(text)
    for i, token in enumerate(tokens):
        if i:
            after_comment = tokens[i - 1].type == "COMMENT"
            out.append("\n" + " " * rnd.randrange(6) if after_comment else rnd.choice(GAPS))
        if rnd.random() < comments and token.type != "COMMENT":
            count += 1
            out.append(f"# note {count}{rnd.choice(['', ' with words', ': {x} [y]'])}")
            out.append(rnd.choice(["\n", "\n\n", "\n    "]))
        out.append(str(token))
    return "".join(out) + rnd.choice(["", "\n", "\n\n"])


def plan_of(text: str, base: Path) -> dict:
    experiment = compile_source(decode("p.bench", text.encode()), base)
    hosts = open_backend_in(experiment, base).hosts()
    document = json.loads(compile_plan(experiment, hosts).json_text())
    return {k: v for k, v in document.items() if k not in ("spec_hash", "hash")}


PLANS: dict[Path, dict] = {}


def assert_formatting_keeps(text: str, plan: dict | None, base: Path) -> None:
    """The properties; the plan is compared when given, else the tokens (which the parser
    turns into the plan: the same tokens, the same plan)."""
    out = format_text(text)
    assert format_text(out) == out
    assert comments_of(out) == comments_of(text)
    if plan is not None:
        assert plan_of(out, base) == plan
    else:
        assert _signature(_lex(out))[0] == _signature(_lex(text))[0]
    for line in out.splitlines():
        code = line.split("  #")[0].rstrip()
        if code.lstrip().startswith("#"):
            continue
        assert len(code) <= 100 or " " not in code.strip() or '"' in code


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.name)
@EACH_SPEC
@given(rnd=st.randoms(use_true_random=False), comments=st.sampled_from([0, 0.1, 0.4]))
def test_every_spec_laid_out_at_random(path, rnd, comments):
    if path not in PLANS:
        PLANS[path] = plan_of(TEXTS[path], path.parent)
    assert_formatting_keeps(relayout(TEXTS[path], rnd, comments), PLANS[path], path.parent)


NAMES = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def experiments(draw) -> str:
    """A valid experiment from the parts of the language the layout treats differently:
    short and long lists, ranges, blocks on one line or several, arithmetic, settings."""
    n = draw(st.integers(1, 3))
    lines = [f'title "generated {draw(st.integers(0, 99))}"', f"seed {draw(st.integers(0, 9))}"]
    if draw(st.booleans()):
        lines.append('env { A = 1 B = "two" }' if draw(st.booleans()) else 'env C = "c"')
    if draw(st.booleans()):
        lines.append(f"timeout {draw(st.sampled_from(['5m', '30s', '1h']))}")
    for k in range(n):
        kind = draw(st.sampled_from(["ints", "strings", "range", "long", "floats"]))
        if kind == "ints":
            levels = draw(st.lists(st.integers(-50, 50), min_size=1, max_size=4, unique=True))
            value = "[" + ", ".join(map(str, levels)) + "]"
        elif kind == "strings":
            value = '["p", "q r", "{s}"]' if draw(st.booleans()) else '["x"]'
        elif kind == "range":
            step = draw(st.sampled_from(["", " step 2", " step 3"]))
            value = f"1..{draw(st.integers(2, 8))}{step}"
        elif kind == "floats":
            value = "[0.5, 1.25, 2e3]"
        else:
            size = draw(st.integers(12, 40))
            value = "[" + ", ".join(str(100000 + 7 * i) for i in range(size)) + "]"
        coverage = " coverage 100%" if draw(st.booleans()) and kind != "long" else ""
        lines.append(f"factor f{k} in {value}{coverage}")
    uses = " ".join(f"{{f{k}}}" for k in range(n))
    lines.append(
        f'benchmark k {{\n run "echo {uses}"\n measure t = wall_time\n measure c = cpu_time\n}}'
    )
    lines.append('metric t { measure mean unit "s" better lower }')
    formula = draw(st.sampled_from(["t / c", "-t * (c - 1) / - 2", "t + 2.5 * c", "(t)"]))
    lines.append(f"metric r = {formula}" + (' { unit "x" }' if draw(st.booleans()) else ""))
    percentile = draw(st.sampled_from([25, 50, 75]))
    lines.append(f"kpi t {{ percentile {percentile} confidence 95% }}")
    order = draw(st.sampled_from(["fixed", "random"]))
    if draw(st.booleans()):
        lines.append(f"design {{ runs {draw(st.integers(11, 13))} order {order} }}")
    else:
        lines.append(f"design {{\n runs auto\n order {order}\n}}")
    if n >= 2 and draw(st.booleans()):
        formula = draw(st.sampled_from(["f0 * f1 + f0:f1", "(f0 + f1) ^ 2", "(f0+f1)^2"]))
        lines.append(f"analysis {{\n anova t ~ {formula}\n}}")
    return "benchlang 1\nexperiment g {\n" + "\n".join(lines) + "\n}\n"


@PROPERTIES
@given(experiments(), st.randoms(use_true_random=False), st.sampled_from([0, 0.15]))
def test_generated_specs_laid_out_at_random(text, rnd, comments):
    plan = plan_of(text, ROOT)
    assert_formatting_keeps(relayout(text, rnd, comments), plan, ROOT)


@MANY
@given(
    st.one_of(st.sampled_from(list(TEXTS.values())), experiments()),
    st.randoms(use_true_random=False),
    st.sampled_from([0, 0.1, 0.4]),
)
def test_many_more_layouts(text, rnd, comments):
    """More layouts of shipped and generated specs (idempotent, every comment kept, the same
    tokens): 60 in the suite, 2,000 under ``BENCHLANG_FUZZ=full``; the tests above compare the
    plans themselves."""
    assert_formatting_keeps(relayout(text, rnd, comments), None, ROOT)
