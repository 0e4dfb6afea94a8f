"""Known answers for plans: the hash of the plan every spec in specs/ compiles to (its own seed,
on the hosts its backend gives: ``local``, or ``local:0``/``local:1`` for slots), through the real
``benchlang plan --json``.

A store keeps the hash of the plan it was run with, and ``benchlang run --resume`` continues a
store only with the same plan. A change that alters these hashes (a new draw order, another
stream name, a reordered JSON field, a different quoting of a plain level) makes every existing
store impossible to resume, and every published spec produce a different plan than the paper
says. If the change is intended, say so in the changelog, bump the plan format, and update the
table below in the same commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

SPECS = Path(__file__).resolve().parents[1] / "specs"

# spec -> (plan hash, number of trials, seeds of the first three trials)
GOLDEN = {
    "ab-layout.bench": (
        "sha256:08c9dc1d020d2252085fa9f400f78bf73484a1642319c3d22c9aa15ddae7fbb6",
        132,
        [1254797967, 1509045905, 1052909794],
    ),
    "datamill.bench": (
        "sha256:58233b7e6a9760fae1191b9c25cf981e5d6aa5bde606d9fce7dd75b0f7d4dc2f",
        60,
        [457626850, 1877313256, 1184491769],
    ),
    "stopping.bench": (
        "sha256:6235f180d3b45a35f964dd2c8dd87a8ede40424abe3d84e7486fa47cc6cb64fd",
        1600,
        [700233814, 1699057324, 1253014794],
    ),
    "compressors.bench": (
        "sha256:9674dafffe91895413c0cb62bc77db2e760c72a353145a8dbf4bb60e70dbaf62",
        45,
        [2001681516, 283930399, 1944242071],
    ),
    "hooks.bench": (
        "sha256:bc0a3946fe61355f3f28025fc5e72bd7d6c6a345096affa326d1fef075cc15e7",
        10,
        [99246557, 2060800688, 546402259],
    ),
    "latency-series.bench": (
        "sha256:52706c8d240f08d80718ddfcd3cb40edfb4f28be937017c18dd00c507cf0c113",
        10,
        [229318860, 585832821, 2055529996],
    ),
    "order-free.bench": (
        "sha256:56933c47ba4365a4b0577d0d34637be3350b2fed6241fbb1ae5f81ee86042b75",
        180,
        [2001681516, 283930399, 1944242071],
    ),
    "order-trap.bench": (
        "sha256:9ef9558241dd0427e3f10dc9342903557ebfc2230520c51366f920edd450f013",
        180,
        [2001681516, 283930399, 1944242071],
    ),
    "quickstart.bench": (
        "sha256:2a6032aabd99162489f763b7c9485d398505aa23790a6cc8475c26085580c811",
        75,
        [1477497676, 215420737, 158703257],
    ),
    "sorting.bench": (
        "sha256:6bfe478e5c992720f8e3a4558eedf529438ebcfaed700af07264d9db1c131669",
        20,
        [1189940117, 1450887415, 338283486],
    ),
}

BREAKS_RESUME = (
    "the plan of specs/{name} changed ({what}): stores run with the old plan can no longer be "
    "resumed (--resume matches the plan hash) and the published spec no longer gives the "
    "published plan. If this is intended, bump the plan format and update GOLDEN in "
    "tests/test_golden_plans.py in the same commit; otherwise find what moved the plan."
)


@pytest.fixture(scope="module")
def plans(cli_in_process) -> dict[str, dict]:
    """``benchlang plan SPEC --json`` of every shipped spec, the CLI in this process (a plan is
    the same in any process: its hash is of canonical JSON, not of Python's string hashes)."""
    out = {}
    for name in sorted(GOLDEN):
        status, stdout, stderr = cli_in_process(["plan", SPECS / name, "--json"], cwd=SPECS)
        assert status == 0, f"benchlang plan specs/{name}: {stderr}"
        out[name] = json.loads(stdout)
    return out


def test_every_spec_has_a_golden_plan():
    shipped = {p.name for p in SPECS.glob("*.bench")}
    assert shipped == set(GOLDEN), (
        "specs/ and GOLDEN differ: add the new spec's plan hash (benchlang plan SPEC --json) "
        f"to tests/test_golden_plans.py; missing {sorted(shipped - set(GOLDEN))}, "
        f"gone {sorted(set(GOLDEN) - shipped)}"
    )


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_plan_hash_is_unchanged(plans, name):
    plan = plans[name]
    hash_, n_trials, first_seeds = GOLDEN[name]
    seeds = plan["trials"]["seed"]
    # The finer checks first, so the message says what moved, then the hash (which covers all).
    assert len(seeds) == n_trials, BREAKS_RESUME.format(
        name=name, what=f"{len(seeds)} trials instead of {n_trials}"
    )
    assert seeds[:3] == first_seeds, BREAKS_RESUME.format(
        name=name, what=f"trial seeds {seeds[:3]} instead of {first_seeds}"
    )
    assert plan["hash"] == hash_, BREAKS_RESUME.format(
        name=name, what=f"hash {plan['hash']} instead of {hash_}"
    )
