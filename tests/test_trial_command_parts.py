"""A trial's command parts are kept per configuration and host when the plan draws no level
for the trial (run/executor/trial.py, ``_command_parts``): on real trials of the local backend,
every trial still gets its own number, seed, configuration and drawn levels, whether its parts
were kept or built for it."""

from __future__ import annotations

import json

from tests.test_hidden_factors import run_spec

SEEN = (
    'run "echo t=$BENCHLANG_TRIAL s=$BENCHLANG_SEED c=$BENCHLANG_CONFIGURATION x={x} '
    'h=$BENCHLANG_HOST{extra}"'
)


def _seen(tmp_path, body: str, extra: str = ""):
    status, plan, store = run_spec(
        tmp_path,
        f"""
  seed 3
  factor x in [1, 2]
{body}
  benchmark k {{ {SEEN.replace("{extra}", extra)} }}
  design {{ runs 5 }}
""",
    )
    with store:
        rows = store.db.execute(
            "SELECT trial, levels, stdout_tail FROM trials WHERE plan_hash = ? ORDER BY trial",
            (plan.hash,),
        ).fetchall()
    assert status == 0 and len(rows) == plan.n_trials == 10
    for trial, levels_json, out in rows:
        config = plan.configurations[int(plan.trial_configuration[trial])]
        words = dict(w.split("=", 1) for w in out.decode().split())
        assert words["t"] == str(trial)
        assert words["s"] == str(int(plan.trial_seed[trial]))
        assert words["c"] == config.label
        assert words["x"] == str(dict(config.levels)["x"])
        assert words["h"] == "local"
        yield words, json.loads(levels_json) if levels_json else {}


def test_kept_parts_give_each_trial_its_own_number_and_seed(tmp_path):
    seen = list(_seen(tmp_path, ""))
    assert len({w["s"] for w, _ in seen}) == len(seen), "a trial got another trial's seed"


def test_levels_drawn_per_trial_reach_each_trial(tmp_path):
    seen = list(_seen(tmp_path, '  factor pad in ["p1", "p2"] hidden', extra=" p={pad}"))
    assert {w["p"] for w, _ in seen} == {"p1", "p2"}
    for words, levels in seen:
        assert words["p"] == levels["pad"]
