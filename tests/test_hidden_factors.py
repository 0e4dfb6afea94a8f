"""DataMill's factor model, part 1: coverage 0%, replicate, hidden factors.

Plans are checked as data (seeded draws, deterministic); trials run for real on the local
backend, and what a command saw (its environment size, its personality, its link order) is
read back from its own output.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections import Counter
from pathlib import Path

import attrs
import numpy as np
import pytest

from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.plan.compile import compile_plan
from benchlang.plan.configurations import covered_levels


def experiment_of(body: str, seed: int = 1, path: str = "h.bench"):
    text = f"benchlang 1\nexperiment h {{\n  seed {seed}\n{body}\n}}\n"
    return compile_source(decode(path, text.encode()))


def errors_of(body: str) -> list[str]:
    with pytest.raises(SpecError) as info:
        experiment_of(body)
    return [d.message for d in info.value.diagnostics if d.severity == "error"]


def run_spec(tmp_path: Path, body: str):
    """``benchlang run`` in this process (so a test may patch what a host is probed with):
    (exit status, the compiled plan, the open store)."""
    from benchlang.cli import main
    from benchlang.run.store import Store

    spec = tmp_path / "h.bench"
    spec.write_text(f"benchlang 1\nexperiment h {{\n{body}\n}}\n")
    status = main(["run", str(spec), "--store", str(tmp_path / "h.sqlite"), "--quiet"])
    plan = compile_plan(compile_source(decode(str(spec), spec.read_bytes())))
    return status, plan, Store(tmp_path / "h.sqlite")


def all_ok(tmp_path: Path, body: str):
    """The trial table of a run that must succeed in every trial."""
    status, plan, store = run_spec(tmp_path, body)
    with store:
        table = store.trial_table(plan.hash)
    assert status == 0 and len(table) == plan.n_trials and table.ok.all()
    return table


# -- coverage 0% -------------------------------------------------------------------------------


def test_coverage_zero_keeps_one_level_chosen_by_the_seed():
    body = '  factor t in ["a", "b", "c", "d"] coverage 0%\n  benchmark k { run "echo {t}" }'
    chosen = Counter()
    for seed in range(60):
        experiment = experiment_of(body, seed)
        kept = covered_levels(experiment.factors[0], 0, seed)
        assert len(kept) == 1
        assert compile_plan(experiment).configurations[0].levels == (("t", kept[0]),)
        chosen[kept[0]] += 1
    assert set(chosen) == {"a", "b", "c", "d"}, "every level can be the one drawn"
    again = experiment_of(body, 7)
    assert covered_levels(again.factors[0], 0, 7) == covered_levels(
        experiment_of(body, 7).factors[0], 0, 7
    )


def test_coverage_outside_zero_to_hundred_is_an_error():
    assert errors_of('  factor t in [1, 2] coverage 150%\n  benchmark k { run "echo {t}" }') == [
        "coverage 150% is outside [0%, 100%]"
    ]


# -- replicate ---------------------------------------------------------------------------------


def test_replicate_multiplies_runs_in_blocks_stored_with_each_trial(tmp_path):
    experiment = experiment_of(
        '  factor t in [1, 2]\n  benchmark k { run "echo {t}" }\n  design { runs 3 series 2 replicate 2 }'
    )
    assert experiment.design.runs == 6 and experiment.design.replicate == 2
    plan = compile_plan(experiment)
    assert plan.n_trials == 2 * 6 * 2
    document = plan.to_json()
    assert document["rounds"]["replicate"] == [0, 0, 0, 1, 1, 1] * 2
    reason = next(d.reason for d in plan.derived if d.name == "runs")
    assert "x 2 replicates" in reason and "DataMill" in reason
    single = compile_plan(experiment_of('  factor t in [1, 2]\n  benchmark k { run "echo {t}" }'))
    assert "replicate" not in single.to_json()["rounds"]

    table = all_ok(
        tmp_path,
        '  factor t in [1, 2]\n  benchmark k { run "echo {t}" }\n  design { runs 1 replicate 3 }',
    )
    assert sorted(lv["replicate"] for lv in table.levels) == [0, 0, 1, 1, 2, 2]


def test_replicate_with_a_stop_rule_or_a_layout_is_an_error():
    messages = errors_of(
        '  benchmark k { run "true" measure t = wall_time }\n  metric t { measure mean }\n'
        "  stop after 5\n  design { replicate 2 }"
    )
    assert any("'replicate' repeats a fixed number of runs" in m for m in messages)
    messages = errors_of(
        '  benchmark k { run "echo {version} {request}" measure t = wall_time }\n'
        "  metric t { measure mean }\n"
        '  design { versions { a "1" b "2" } layout unbalanced { hosts 2 } requests [1, 2] replicate 2 }\n'
        "  analysis { compare t by version }"
    )
    assert "'replicate' does not apply to a layout design" in messages


# -- hidden factors: the plan ------------------------------------------------------------------

HIDDEN = """
  factor tool in ["a", "b"]
  factor pad in [0, 64, 4096] hidden
  factor env_padding hidden { sizes [0, 100, 1000] per round }
  factor aslr hidden
  factor link_order hidden { objects ["x.o", "y z.o", "w.o"] }
  factor drop_caches hidden { per round }
  benchmark k { run "echo {tool} {pad} {link_order}" }
  design { runs 300 }
"""


def test_hidden_factors_are_drawn_per_trial_or_round_from_seeded_streams():
    plan = compile_plan(experiment_of(HIDDEN))
    assert len(plan.configurations) == 2, "hidden factors are not crossed"
    assert plan.configurations[0].command == "echo a {pad} {link_order}"
    drawn = plan.trial_hidden
    rounds = plan.trial_round
    for name in ("env_padding", "drop_caches"):
        for r in range(plan.n_rounds):
            assert len({drawn[name][t] for t in np.flatnonzero(rounds == r)}) == 1
    per_round = Counter(drawn["drop_caches"][t] for t in range(0, plan.n_trials, 2))
    assert set(per_round) == {"kept", "dropped"}
    counts = Counter(drawn["pad"])
    assert set(counts) == {0, 64, 4096}
    expected = plan.n_trials / 3
    chi2 = sum((c - expected) ** 2 / expected for c in counts.values())
    assert chi2 < 13.8, "uniform over the levels (chi-square, 2 df, p = 0.001)"
    assert Counter(drawn["aslr"]).keys() == {"on", "off"}
    orders = Counter(drawn["link_order"])
    assert all(sorted(o) == sorted(["x.o", "y z.o", "w.o"]) for o in orders)
    assert len(orders) == 6, "every permutation of three objects occurs in 600 draws"
    again = compile_plan(experiment_of(HIDDEN))
    assert again.hash == plan.hash and again.trial_hidden == drawn
    other = compile_plan(experiment_of(HIDDEN, seed=2))
    assert other.trial_hidden["pad"] != drawn["pad"]
    document = json.loads(plan.canonical_json)
    assert [h["name"] for h in document["hidden"]] == [
        "pad",
        "env_padding",
        "aslr",
        "link_order",
        "drop_caches",
    ]
    assert document["trials"]["hidden"]["link_order"][0] == list(drawn["link_order"][0])
    assert plan.plan_levels(5) == {k: v[5] for k, v in drawn.items()}


STRATIFIED = """
  factor tool in ["a", "b"]
  factor drop_caches hidden { per round }
  factor reused in ["x", "y", "z"] hidden { per round }
  factor aslr hidden
  factor pad in [0, 64, 4096] hidden
  factor env_padding hidden { sizes 0..65536 }
  factor link_order hidden { objects ["a.o", "b.o", "c.o"] }
  benchmark k { run "echo {tool} {pad} {reused} {link_order}" }
  design { runs %d }
"""


def _balanced(values: list) -> bool:
    counts = Counter(values).values()
    return max(counts) - min(counts) <= 1


def test_hidden_levels_are_dealt_evenly_so_no_seed_leaves_a_factor_constant():
    """With independent draws seed 1 gave every one of 4 rounds 'kept'. Now
    each level appears floor(R/L) or ceil(R/L) times over the rounds (per trial: over each
    configuration's trials), for every seed 1..200 and R = 2..8 rounds."""
    for rounds in range(2, 9):
        experiment = experiment_of(STRATIFIED % rounds)
        for seed in range(1, 201):
            plan = compile_plan(attrs.evolve(experiment, seed=seed))
            drawn = plan.trial_hidden
            first = plan.round_bounds[:-1]
            for name, n_levels in (("drop_caches", 2), ("reused", 3)):
                per_round = [drawn[name][t] for t in first]
                assert len(set(per_round)) == min(n_levels, rounds), (name, seed, rounds)
                assert _balanced(per_round), (name, seed, rounds, per_round)
            for c in range(len(plan.configurations)):
                mine = np.flatnonzero(plan.trial_configuration == c)
                for name, n_levels in (("aslr", 2), ("pad", 3)):
                    values = [drawn[name][t] for t in mine]
                    assert len(set(values)) == min(n_levels, rounds), (name, seed, rounds)
                    assert _balanced(values), (name, seed, rounds, values)
                sizes = np.array([drawn["env_padding"][t] for t in mine])
                strata = np.floor(np.sort(sizes) * rounds / 65537).astype(int)
                assert strata.tolist() == list(range(rounds)), "one size per equal stratum"
                orders = [drawn["link_order"][t] for t in mine]
                assert len(set(orders)) == rounds if rounds <= 3 else len(set(orders)) >= 3
                for position in range(3):
                    assert _balanced([o[position] for o in orders] + ["a.o", "b.o", "c.o"])


def test_hidden_factors_of_the_same_per_are_crossed_in_full_blocks():
    body = """
  factor aslr hidden
  factor pad in [0, 64, 4096] hidden
  benchmark k { run "echo {pad}" }
  design { runs 14 }
"""
    for seed in range(1, 21):
        plan = compile_plan(experiment_of(body, seed=seed))
        pairs = Counter(zip(plan.trial_hidden["aslr"], plan.trial_hidden["pad"], strict=True))
        assert len(pairs) == 6 and min(pairs.values()) >= 2, "14 trials: every pair twice"
        assert _balanced(plan.trial_hidden["aslr"]) and _balanced(plan.trial_hidden["pad"])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("  factor aslrr hidden", "'aslrr' is not a built-in hidden factor"),
        ("  factor link_order hidden", "link_order needs the objects to permute"),
        (
            '  factor link_order hidden { objects ["a.o"] }',
            "objects: link_order needs at least two distinct objects",
        ),
        (
            "  factor pad in [1, 2] coverage 50% hidden",
            "coverage does not apply to a hidden factor",
        ),
        ("  factor aslr hidden { per run }", "per: expected one of trial, round; got run"),
        (
            "  factor env_padding hidden { sizes [0, 100000] }",
            "sizes: sizes must lie in 0..65536 bytes",
        ),
        (
            "  factor replicate in [1, 2]",
            "'replicate' is reserved for the design and cannot be a factor",
        ),
    ],
)
def test_hidden_factor_errors(body, message):
    assert message in errors_of(body + '\n  benchmark k { run "true" }')


def test_hidden_placeholder_in_a_benchmark_setup_is_refused():
    messages = errors_of(
        '  factor pad in [1, 2] hidden\n  benchmark k { run "true" setup "echo {pad}" }'
    )
    assert any(
        m.startswith("placeholder {pad} cannot be used here: a benchmark's setup") for m in messages
    )


def test_unused_hidden_factor_warns():
    from benchlang.lang.check import check_source

    text = 'benchlang 1\nexperiment h {\n  factor pad in [1, 2] hidden\n  benchmark k { run "true" }\n}\n'
    warnings = check_source(decode("h.bench", text.encode())).warnings
    assert any("factor 'pad' is not used" in d.message for d in warnings)


def test_hidden_aslr_needs_a_backend_that_sets_it():
    from benchlang.backends.registry import backend_kinds
    from benchlang.lang.check import compile_source as compile_with

    text = (
        'benchlang 1\nexperiment h {\n  hosts scripted { nodes ["n1"] }\n  factor aslr hidden\n'
        '  benchmark k { run "true" }\n}\n'
    )
    kinds = dict(backend_kinds())
    if "scripted" not in kinds:
        from benchlang.testing.scripted import ScriptedBackend

        kinds["scripted"] = ScriptedBackend
    with pytest.raises(SpecError) as info:
        compile_with(decode("h.bench", text.encode()), backends=kinds)
    assert "hosts scripted cannot turn address-space randomisation off per trial" in str(info.value)


def test_existing_plans_keep_their_hash_and_have_no_hidden_keys():
    plan = compile_plan(experiment_of('  factor t in [1, 2]\n  benchmark k { run "echo {t}" }'))
    document = plan.to_json()
    assert "hidden" not in document and "hidden" not in document["trials"]


# -- hidden factors: real trials ---------------------------------------------------------------

SEEN = (
    'run "echo pad=${{#BENCHLANG_ENV_PADDING}} persona=$(cat /proc/self/personality) '
    'order={link_order} p={pad}"'
)


def test_a_trial_gets_its_drawn_levels_applied_and_stored(tmp_path):
    status, plan, store = run_spec(
        tmp_path,
        f"""
  seed 5
  factor pad in ["p1", "p 2"] hidden
  factor env_padding hidden {{ sizes [0, 300, 2000] }}
  factor aslr hidden {{ per round }}
  factor link_order hidden {{ objects ["a.o", "b c.o", "d.o"] }}
  benchmark k {{ {SEEN} }}
  design {{ runs 12 }}
""",
    )
    with store:
        rows = store.db.execute(
            "SELECT trial, levels, stdout_tail FROM trials WHERE plan_hash = ? ORDER BY trial",
            (plan.hash,),
        ).fetchall()
    assert status == 0 and len(rows) == 12
    personas = set()
    for trial, levels_json, out in rows:
        levels = json.loads(levels_json)
        assert levels == {
            k: (list(v) if isinstance(v, tuple) else v) for k, v in plan.plan_levels(trial).items()
        }
        words = dict(w.split("=", 1) for w in out.decode().split(" ", 2))
        assert int(words["pad"]) == levels["env_padding"]
        persona = int(words["persona"], 16)
        assert bool(persona & 0x0040000) == (levels["aslr"] == "off")
        personas.add(levels["aslr"])
        assert words["order"] == " ".join(levels["link_order"]) + " p=" + levels["pad"] + "\n"
    assert personas == {"on", "off"}


@pytest.mark.skipif(shutil.which("setarch") is None, reason="setarch (util-linux) is not installed")
def test_aslr_without_the_launcher_goes_through_setarch(tmp_path, monkeypatch):
    from benchlang.backends import launcher as launcher_module
    from benchlang.backends.base import Command
    from benchlang.backends.local import LocalSession
    from benchlang.native import CC_ENV

    monkeypatch.setenv(CC_ENV, str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    launcher_module._find.cache_clear()
    try:
        session = LocalSession("local", tmp_path)
        try:
            off = session.run_blocking(Command("cat /proc/self/personality", aslr=False))
            on = session.run_blocking(Command("cat /proc/self/personality", aslr=True))
        finally:
            asyncio.run(session.close())
    finally:
        launcher_module._find.cache_clear()
    assert int(off.stdout, 16) & 0x0040000 and not int(on.stdout, 16) & 0x0040000


def test_drop_caches_where_not_permitted_refuses_the_host(tmp_path, monkeypatch, capsys):
    """Where /proc/sys/vm/drop_caches is not writable (an unprivileged user, a container) the
    host is refused before its first trial, with the reason: no trial is stored as if its
    caches were dropped. The probe is pointed at a file no user can write, as on such a host."""
    from benchlang.run import hidden

    monkeypatch.setattr(hidden, "CAN_DROP", "test -w /proc/no-such-dir/drop_caches")
    status, plan, store = run_spec(
        tmp_path, '  factor drop_caches hidden\n  benchmark k { run "true" }\n  design { runs 2 }'
    )
    with store:
        table = store.trial_table(plan.hash)
        events = store.db.execute("SELECT * FROM events").fetchall()
    assert status != 0 and len(table) == 0
    assert any(
        "drop_caches: /proc/sys/vm/drop_caches is not writable here" in str(e) for e in events
    ), events
    said = capsys.readouterr()
    assert "drop_caches: /proc/sys/vm/drop_caches is not writable here" in said.out + said.err


@pytest.mark.skipif(
    not os.access("/proc/sys/vm/drop_caches", os.W_OK), reason="needs root to drop caches"
)
def test_drop_caches_runs_before_dropped_trials(tmp_path):
    table = all_ok(
        tmp_path,
        '  seed 2\n  factor drop_caches hidden\n  benchmark k { run "true" }\n  design { runs 6 }',
    )
    assert {lv["drop_caches"] for lv in table.levels} == {"kept", "dropped"}
