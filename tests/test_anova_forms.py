"""Every `anova` form the docs show (docs/language.md, statistics.md, hidden-factors.md,
hardware-factors.md, specs/datamill.bench), pooled and `by host`, through the CLI on one seeded
store (the reduced model by host failed on every host). The command reports
its own value and logs its levels, so each table is checked against sums of squares computed by
hand from the cell means of the balanced design (Montgomery, Design and Analysis of
Experiments, 8th ed., §5.3) rather than against the code under test."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchlang.jsonout import loads
from tests.conftest import cli_here

VALUE = """import os, random, sys
tool, level = sys.argv[1], int(sys.argv[2])
rng = random.Random(int(os.environ["BENCHLANG_SEED"]))
host = os.environ["BENCHLANG_HOST"]
with open("/proc/self/personality") as f:
    aslr = "off" if int(f.read(), 16) & 0x0040000 else "on"
pad = len(os.environ.get("BENCHLANG_ENV_PADDING", ""))
v = 10 + 2.0 * (tool == "xz") + 0.3 * level + 1.5 * (host == "local:2") + 0.5 * (aslr == "off")
v += pad / 4096 + rng.gauss(0, 0.5)
with open("levels.log", "a") as log:
    log.write(f"{host} {tool} {level} {aslr} {pad} {v:.9f}\\n")
print(f"v={v:.9f}")
"""

FACTS = {
    "local:0": {"cpu_model": "Xeon"},
    "local:1": {"cpu_model": "Xeon"},
    "local:2": {"cpu_model": "EPYC"},
}

FORMS = [
    "(tool + level + aslr)^2 by host",
    "(cpu + tool + level)^2 by host",
    "tool * level * aslr by host",
    "tool + level by host",
    "(tool + level + aslr)^2",
    "tool * level * aslr",
    "tool * level",
    "tool + level : aslr",
    "tool + env_padding",
    "cpu * level + host",
    "host",
]

SPEC = """benchlang 1
experiment forms {
  seed 5
  hosts local { slots 3 facts from file "facts.json" }
  factor tool in ["gzip", "xz"]
  factor level in [1, 9]
  factor cpu from hosts "cpu_model"
  factor aslr hidden
  factor env_padding hidden { sizes 0..4096 step 1024 }
  benchmark b { run "python3 value.py {tool} {level}"
    measure t from stdout regex "v=([0-9.e+-]+)" }
  metric t { measure mean }
  design { runs 4 }
  analysis {
%s
  }
}
"""


def _cli(cwd: Path, *args: str) -> str:
    """The CLI in this process (``cli_here``); the trials it runs are processes."""
    code, out, err = cli_here(args, cwd=cwd)
    assert code == 0, err
    return out + err


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    where = tmp_path_factory.mktemp("forms")
    (where / "facts.json").write_text(json.dumps(FACTS))
    (where / "value.py").write_text(VALUE)
    (where / "forms.bench").write_text(SPEC % "\n".join(f"    anova t ~ {f}" for f in FORMS))
    _cli(where, "run", "forms.bench", "--store", "forms.sqlite", "-q", "-i")
    text = _cli(where, "analyze", "forms.bench", "--store", "forms.sqlite")
    found = loads(_cli(where, "analyze", "forms.bench", "--store", "forms.sqlite", "--json"))
    rows = [line.split() for line in (where / "levels.log").read_text().splitlines()]
    log = {
        "host": np.array([r[0] for r in rows]),
        "tool": np.array([r[1] for r in rows]),
        "level": np.array([r[2] for r in rows]),
        "aslr": np.array([r[3] for r in rows]),
        "env_padding": np.array([r[4] for r in rows]),
        "t": np.array([float(r[5]) for r in rows]),
    }
    log["cpu"] = np.array([FACTS[h]["cpu_model"] for h in log["host"]])
    return text, dict(zip(FORMS, found["comparisons"], strict=True)), log


def _cells(y: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Each value's cell mean over the given factors."""
    cell = np.unique(np.stack(keys, axis=1), axis=0, return_inverse=True)[1].ravel()
    return (np.bincount(cell, weights=y) / np.bincount(cell))[cell]


def _by_hand(y: np.ndarray, log: dict, mine: np.ndarray, terms: list[str]) -> dict[str, float]:
    """Sums of squares of main effects and two- and three-factor interactions of a balanced
    factorial, from cell means (Montgomery §5.3, §5.4)."""
    col = {k: v[mine] for k, v in log.items()}
    y = y[mine]
    g = y.mean()
    out = {}
    for term in terms:
        names = term.split(":")
        keys = [col[n] for n in names]
        if len(names) == 1:
            effect = _cells(y, *keys) - g
        elif len(names) == 2:
            effect = _cells(y, *keys) - _cells(y, keys[0]) - _cells(y, keys[1]) + g
        else:
            a, b, c = keys
            effect = (
                _cells(y, a, b, c)
                - _cells(y, a, b)
                - _cells(y, a, c)
                - _cells(y, b, c)
                + _cells(y, a)
                + _cells(y, b)
                + _cells(y, c)
                - g
            )
        out[term] = float((effect**2).sum())
    return out


def _check(table: dict, log: dict, mine: np.ndarray, terms: list[str]) -> None:
    rows = {r["term"]: r for r in table["rows"]}
    assert list(rows) == [*terms, "Residual"]
    assert table["n"] == int(mine.sum())
    y = log["t"]
    hand = _by_hand(y, log, mine, terms)
    for term, ss in hand.items():
        assert rows[term]["sum_sq"] == pytest.approx(ss, rel=1e-6)
    total = float(((y[mine] - y[mine].mean()) ** 2).sum())
    assert rows["Residual"]["sum_sq"] == pytest.approx(total - sum(hand.values()), rel=1e-6)
    assert table["r_squared"] == pytest.approx(sum(hand.values()) / total, rel=1e-6)
    df_resid = int(mine.sum()) - 1 - sum(rows[t]["df"] for t in terms)
    assert rows["Residual"]["df"] == df_resid
    assert rows[terms[0]]["f"] == pytest.approx(
        rows[terms[0]]["mean_sq"] / (rows["Residual"]["sum_sq"] / df_resid)
    )


REDUCED = ["tool", "level", "aslr", "tool:level", "tool:aslr", "level:aslr"]
FULL = [*REDUCED, "tool:level:aslr"]


@pytest.mark.parametrize(
    ("form", "terms"),
    [
        ("(tool + level + aslr)^2 by host", REDUCED),
        ("(cpu + tool + level)^2 by host", ["tool", "level", "tool:level"]),
        ("tool * level * aslr by host", FULL),
        ("tool + level by host", ["tool", "level"]),
    ],
)
def test_every_form_by_host_gives_each_host_its_table(store, form, terms):
    text, found, log = store
    hosts = sorted(set(log["host"]))
    assert len(hosts) == 2  # one host per CPU model: the minimum set cover of the levels
    assert "no table" not in text
    tables = found[form]["anova_by_host"]["tables"]
    assert [t["host"] for t in tables] == hosts
    for t in tables:
        assert t["problem"] is None
        _check(t["anova"], log, log["host"] == t["host"], terms)
        if form.startswith("(cpu"):
            assert t["notes"] == [f"cpu has one level on host {t['host']}: its terms are left out"]
            assert t["anova"]["formula"] == "metric ~ (tool + level)^2"
        else:
            assert t["notes"] == []
        shown = form.removesuffix(" by host").replace("(cpu + ", "(")
        assert f"t on host {t['host']}: metric ~ {shown}, n = {t['anova']['n']}" in text


@pytest.mark.parametrize(
    ("form", "terms"),
    [
        ("(tool + level + aslr)^2", REDUCED),
        ("tool * level * aslr", FULL),
        ("tool * level", ["tool", "level", "tool:level"]),
        ("tool + level : aslr", ["tool", "level:aslr"]),
        ("cpu * level + host", ["cpu", "level", "cpu:level"]),
        ("host", ["host"]),
    ],
)
def test_every_pooled_form_matches_the_cell_means(store, form, terms):
    text, found, log = store
    table = found[form]["mixed_effects"]
    mine = np.ones(log["t"].size, bool)
    if form == "tool + level : aslr":  # level:aslr alone: the level x aslr cells (3 df)
        rows = {r["term"]: r for r in table["rows"]}
        y, g = log["t"], log["t"].mean()
        cells = float(((_cells(y, log["level"], log["aslr"]) - g) ** 2).sum())
        assert rows["level:aslr"]["df"] == 3
        assert rows["level:aslr"]["sum_sq"] == pytest.approx(cells, rel=1e-6)
        assert rows["tool"]["sum_sq"] == pytest.approx(_by_hand(y, log, mine, ["tool"])["tool"])
    else:
        _check(table, log, mine, terms)
    assert f"t: metric ~ {form}, n = {log['t'].size}" in text
    if form == "cpu * level + host":
        assert table["dropped"] == ["host is determined by cpu: its term is dropped"]


def test_a_hidden_factor_with_unbalanced_levels_is_a_term(store):
    """env_padding's five sizes over 32 trials are not balanced against tool: its type II sum
    of squares is the reduction in the residual when it is added after tool."""
    _text, found, log = store
    table = found["tool + env_padding"]["mixed_effects"]
    rows = {r["term"]: r for r in table["rows"]}
    y = log["t"]
    after_tool = float(((y - _cells(y, log["tool"])) ** 2).sum())
    both = float(((y - _fit(y, log["tool"], log["env_padding"])) ** 2).sum())
    assert rows["env_padding"]["df"] == np.unique(log["env_padding"]).size - 1
    assert rows["env_padding"]["sum_sq"] == pytest.approx(after_tool - both, rel=1e-6)
    assert rows["Residual"]["sum_sq"] == pytest.approx(both, rel=1e-6)


def _fit(y: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Least-squares fit of an additive model in indicator columns."""
    x = [np.ones(y.size)]
    for k in keys:
        x += [(k == v).astype(float) for v in np.unique(k)[1:]]
    design = np.stack(x, axis=1)
    return design @ np.linalg.lstsq(design, y, rcond=None)[0]
