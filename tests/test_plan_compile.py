"""The compiled plan: determinism across processes, sizing, orders, coverage, quoting."""

from __future__ import annotations

import hashlib
import json
import math
import textwrap
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from benchlang.backends.base import Command
from benchlang.backends.local import LocalSession
from benchlang.lang.check import compile_source
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan
from benchlang.plan.configurations import configurations, covered_levels

FULL = Path(__file__).parent / "specs" / "full.bench"


def experiment_of(body: str, seed: int = 1):
    text = f"benchlang 1\nexperiment p {{\n  seed {seed}\n{textwrap.dedent(body)}\n}}\n"
    return compile_source(decode("p.bench", text.encode()))


def plan_of(body: str, seed: int = 1):
    return compile_plan(experiment_of(body, seed))


FACTORIAL = """
  factor a in [1, 2, 3]
  factor b in ["x", "y"]
  benchmark k {{ run "echo {{a}} {{b}}" }}
  design {{ runs {runs} order {order} }}
"""


@pytest.mark.slow
def test_same_spec_same_bytes_across_processes(run_cli_many):
    first, second, other_seed = run_cli_many(
        [
            ["plan", FULL, "--json"],
            ["plan", FULL, "--json"],
            ["plan", FULL, "--json", "--seed", "8"],
        ]
    )
    assert first[0] == second[0] == other_seed[0] == 0
    assert first[1] == second[1]
    plan = json.loads(first[1])
    body = first[1].strip()
    canonical = body[: body.rindex(',"hash":')] + "}"
    assert plan["hash"] == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()
    in_process = compile_plan(compile_source(decode(str(FULL), FULL.read_bytes()), FULL.parent))
    assert in_process.json_text() + "\n" == first[1]
    reseeded = json.loads(other_seed[1])
    assert reseeded["hash"] != plan["hash"]
    assert reseeded["trials"]["configuration"] != plan["trials"]["configuration"]
    assert sorted(reseeded["trials"]["configuration"]) == sorted(plan["trials"]["configuration"])


def test_hash_changes_with_the_spec_and_the_seed():
    base = FACTORIAL.format(runs=3, order="random")
    p1, p2 = plan_of(base), plan_of(base)
    assert p1.hash == p2.hash and p1.json_text() == p2.json_text()
    assert plan_of(base + '  title "other"\n').hash != p1.hash
    assert plan_of(base.replace("[1, 2, 3]", "[1, 2, 4]")).hash != p1.hash
    assert plan_of(base, seed=2).hash != p1.hash


@pytest.mark.parametrize(
    ("percentile", "confidence", "expected"),
    [(95, 95, 59), (95, 99, 90), (99, 95, 299), (90, 95, 29), (50, 95, 5), (5, 95, 59)],
)
def test_runs_auto_follows_thompson_sizing(percentile, confidence, expected):
    plan = plan_of(f"""
      benchmark k {{ run "true" }}
      metric wall_time {{ measure mean }}
      kpi wall_time {{ percentile {percentile} confidence {confidence}% }}
      design {{ runs auto order fixed }}
    """)
    q = max(percentile, 100 - percentile) / 100
    formula = math.ceil(math.log(1 - confidence / 100) / math.log(q) - 1e-12)
    assert formula == expected  # TriScale Table 2
    runs = next(d for d in plan.derived if d.name == "runs")
    assert runs.value == expected
    assert "Thompson" in runs.reason
    assert plan.n_trials == expected


def test_runs_auto_with_excluded_samples_is_the_smallest_binomial_n():
    plan = plan_of("""
      benchmark k { run "true" }
      metric wall_time { measure mean }
      kpi wall_time { percentile 90 confidence 95% exclude 2 }
    """)
    n = np.arange(1, 400)
    ok = binom.cdf(n - 2 - 1, n, 0.9) >= 0.95
    assert plan.n_trials == int(n[ok][0])
    assert not ok[: n[ok][0] - 1].any()


def test_series_auto_from_the_variability_score():
    plan = plan_of("""
      benchmark k { run "true" }
      metric wall_time { measure mean }
      kpi wall_time { percentile 50 confidence 95% }
      variability wall_time { percentile 25 confidence 75% }
      design { runs auto series auto span 1h }
    """)
    expected = math.ceil(math.log(0.25) / math.log(0.75))
    assert plan.round_series.max() + 1 == expected == 5
    assert plan.n_rounds == 5 * 5
    assert plan.series_start.tolist() == [0.0, 3600.0, 7200.0, 10800.0, 14400.0]
    starts = plan.round_start
    assert starts[0] == 0 and np.all(np.diff(starts) >= 0) and starts[-1] < 5 * 3600
    assert np.all(starts // 3600 == plan.round_series), "each round inside its series' span"


def check_rounds(plan, n_configs):
    """Each round runs every configuration once, at positions 0..C-1."""
    rounds = plan.trial_configuration.reshape(plan.n_rounds, n_configs)
    positions = plan.trial_position.reshape(plan.n_rounds, n_configs)
    assert np.array_equal(
        np.sort(rounds, axis=1), np.broadcast_to(np.arange(n_configs), rounds.shape)
    )
    assert np.array_equal(positions, np.broadcast_to(np.arange(n_configs), positions.shape))
    assert np.array_equal(plan.trial_round, np.repeat(np.arange(plan.n_rounds), n_configs))
    pairs = set(zip(plan.trial_round.tolist(), plan.trial_configuration.tolist(), strict=True))
    assert len(pairs) == plan.n_trials == plan.n_rounds * n_configs
    return rounds


def test_fixed_order():
    plan = plan_of(FACTORIAL.format(runs=4, order="fixed"))
    rounds = check_rounds(plan, 6)
    assert (rounds == np.arange(6)).all()
    assert set(plan.round_order.tolist()) == {0}


def test_random_order_permutes_each_round_differently():
    plan = plan_of(FACTORIAL.format(runs=40, order="random"))
    rounds = check_rounds(plan, 6)
    assert set(plan.round_order.tolist()) == {1}
    distinct = {tuple(r) for r in rounds.tolist()}
    assert len(distinct) > 20
    # every configuration reaches every position (no position bias built in)
    for position in range(6):
        assert set(rounds[:, position].tolist()) == set(range(6))


def test_fixed_vs_random_alternates_half_each():
    plan = plan_of(FACTORIAL.format(runs=10, order="fixed_vs_random"))
    rounds = check_rounds(plan, 6)
    assert plan.n_rounds == 20
    kinds = plan.round_order.tolist()
    assert kinds == [0, 1] * 10
    assert (rounds[0::2] == np.arange(6)).all()
    random_rounds = rounds[1::2]
    assert len({tuple(r) for r in random_rounds.tolist()}) > 5
    order = next(d for d in plan.derived if d.name == "order")
    assert "interleaved" in order.reason


@pytest.mark.parametrize(
    ("coverage", "levels", "kept"),
    [(50, 10, 5), (34, 10, 4), (1, 10, 1), (99, 7, 7), (100, 3, 3), (25, 9, 3)],
)
def test_coverage_keeps_ceil_share_deterministically(coverage, levels, kept):
    body = f"""
      factor f in 1..{levels} coverage {coverage}%
      benchmark k {{ run "echo {{f}}" }}
    """
    chosen = [
        tuple(c.levels[0][1] for c in configurations(experiment_of(body, seed)))
        for seed in range(12)
    ]
    assert all(len(c) == kept == math.ceil(coverage / 100 * levels) for c in chosen)
    assert all(list(c) == sorted(c) and set(c) <= set(range(1, levels + 1)) for c in chosen)
    again = [
        tuple(c.levels[0][1] for c in configurations(experiment_of(body, seed)))
        for seed in range(12)
    ]
    assert again == chosen
    if kept < levels:
        assert len(set(chosen)) > 1, "the seed should pick the levels"


def test_coverage_of_one_factor_depends_on_seed_not_on_other_factors():
    e = experiment_of(
        """
      factor f in 1..10 coverage 30%
      factor g in ["a", "b"]
      benchmark k { run "echo {f} {g}" }
    """,
        seed=5,
    )
    kept = covered_levels(e.factor("f"), 0, 5)
    assert len(kept) == 3
    assert {c.levels[0][1] for c in configurations(e)} == set(kept)
    assert len(configurations(e)) == 6


HOSTILE = [
    "two words",
    "it's",
    'say "hi"',
    "$(touch pwned)",
    "`touch pwned`",
    "a; touch pwned",
    "x && touch pwned",
    "$HOME",
    "*",
    "back\\slash",
    "new\nline",
    "-n",
]


def test_factor_values_are_shell_quoted_and_never_executed(tmp_path):
    levels = ", ".join(json.dumps(v) for v in HOSTILE)
    e = experiment_of(f"""
      factor v in [{levels}]
      benchmark k {{ run "printf '%s|' {{v}}" }}
    """)
    session = LocalSession("local", tmp_path)
    try:
        for config in configurations(e):
            value = dict(config.levels)["v"]
            execution = session.run_blocking(Command(config.command, cwd="."))
            assert execution.exit_status == 0, execution.stderr
            assert execution.stdout.decode() == value + "|", config.command
    finally:
        import asyncio

        asyncio.run(session.close())
    assert not (tmp_path / "pwned").exists()
    assert not (Path.cwd() / "pwned").exists()


def test_numbers_in_commands():
    e = experiment_of("""
      factor n in [1, 2.5, -3, 1e3]
      benchmark k { run "echo {n}" }
    """)
    assert [c.command for c in configurations(e)] == [
        "echo 1",
        "echo 2.5",
        "echo -3",
        "echo 1000.0",
    ]


def test_million_trial_plan_shape():
    """A 1e6-trial plan compiles with consistent columns (timing is benchmarks/bench_plan.py)."""
    plan = plan_of("""
      factor a in 1..10
      factor b in 1..10
      factor c in 1..100
      benchmark k { run "echo {a} {b} {c}" }
      design { runs 100 order random }
    """)
    assert plan.n_trials == 1_000_000
    assert plan.trial_configuration.min() == 0 and plan.trial_configuration.max() == 9999
    assert np.bincount(plan.trial_configuration).tolist() == [100] * 10_000


def test_ranges_expand_to_clean_levels():
    e = experiment_of("""
      factor f in 0..1 step 0.1
      factor g in -2..2
      factor h in 1..9 step 4
      benchmark k { run "echo {f} {g} {h}" }
    """)
    assert e.factor("f").levels == (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    assert e.factor("g").levels == (-2, -1, 0, 1, 2)
    assert e.factor("h").levels == (1, 5, 9)
    assert configurations(e)[3 * 5 * 3].command == "echo 0.3 -2 1"


@settings(max_examples=60, deadline=None)
@given(
    levels=st.lists(st.integers(1, 5), min_size=0, max_size=3),
    coverage=st.sampled_from([100, 50, 34, 1]),
    runs=st.integers(1, 4),
    series=st.integers(1, 3),
    order=st.sampled_from(["fixed", "random", "fixed_vs_random"]),
    seed=st.integers(0, 2**63 - 1),
    benchmarks=st.integers(1, 2),
)
def test_plan_invariants(levels, coverage, runs, series, order, seed, benchmarks):
    factors = "".join(
        f"  factor f{i} in 1..{n} coverage {coverage}%\n" for i, n in enumerate(levels)
    )
    used = " ".join(f"{{f{i}}}" for i in range(len(levels)))
    benches = "".join(f'  benchmark b{j} {{ run "echo {j} {used}" }}\n' for j in range(benchmarks))
    body = f"{factors}{benches}  design {{ runs {runs} series {series} order {order} span 1h }}\n"
    plan = plan_of(body, seed=seed)
    kept = math.prod(max(1, math.ceil(coverage / 100 * n - 1e-9)) for n in levels)
    n_configs = kept * benchmarks
    assert len(plan.configurations) == n_configs
    per_series = runs * (2 if order == "fixed_vs_random" else 1)
    assert plan.n_rounds == per_series * series
    check_rounds(plan, n_configs)
    assert plan.round_series.tolist() == sorted(plan.round_series.tolist())
    assert np.bincount(plan.round_series).tolist() == [per_series] * series
    assert np.array_equal(plan.trial_series, np.repeat(plan.round_series, n_configs))
    if order == "fixed_vs_random":
        assert plan.round_order.tolist() == [0, 1] * (runs * series)
    assert plan.series_start[0] == 0 and (np.diff(plan.series_start) >= 0).all()
    assert len({c.command for c in plan.configurations}) == n_configs
    assert plan_of(body, seed=seed).json_text() == plan.json_text()


def test_big_integer_ranges_stay_exact():
    e = experiment_of("""
      factor f in 10000000000000000..10000000000000002
      benchmark k { run "echo {f}" }
    """)
    assert e.factor("f").levels == (10**16, 10**16 + 1, 10**16 + 2)


LEVEL = st.one_of(
    st.text(max_size=12),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
)


@settings(max_examples=150, deadline=None)
@given(
    names=st.lists(st.text(min_size=1, max_size=6), min_size=0, max_size=3, unique=True),
    rows=st.lists(
        st.tuples(
            st.text(max_size=10), st.text(max_size=20), st.lists(LEVEL, min_size=3, max_size=3)
        ),
        min_size=0,
        max_size=4,
    ),
)
def test_canonical_json_is_json_dumps_byte_for_byte(names, rows):
    """The plan's hand-assembled JSON equals json.dumps of its dict form, so hashes are
    those of the documented canonical form."""
    from benchlang.plan.plan import Configuration

    plan = plan_of(FACTORIAL.format(runs=2, order="random"))
    configs = tuple(
        Configuration(i, bench, tuple(zip(names, values[: len(names)], strict=True)), command)
        for i, (bench, command, values) in enumerate(rows)
    )
    plan = attrs.evolve(plan, configurations=configs)
    expected = json.dumps(plan.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    assert plan.canonical_json == expected
    assert (
        json.loads(plan.json_text())["hash"]
        == "sha256:" + hashlib.sha256(expected.encode()).hexdigest()
    )
