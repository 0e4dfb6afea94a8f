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
        "sha256:fe9282c3dfcd3137de62ddb959c784710fdf85f3dd1dc75f028747b55234660e",
        132,
        [1254797967, 1509045905, 1052909794],
    ),
    "compressors.bench": (
        "sha256:d42a4d18a32e6d50db9b0a153b5b1838279f397af5c3b5ba72e00828193563f2",
        45,
        [2001681516, 283930399, 1944242071],
    ),
    "hooks.bench": (
        "sha256:ac7e31da8fdf8d4708928882f7b076420f32f12a7857b89164c5c7c231c02f30",
        10,
        [99246557, 2060800688, 546402259],
    ),
    "latency-series.bench": (
        "sha256:95fef26a235edab0c650e47d9012618300fdd76552fbca62ec4a863088102919",
        10,
        [229318860, 585832821, 2055529996],
    ),
    "order-free.bench": (
        "sha256:1318a9c28e0dba8d5fa2bd93a0346f8b35caedb4611b8e169c7ce91c6c920df9",
        180,
        [2001681516, 283930399, 1944242071],
    ),
    "order-trap.bench": (
        "sha256:2e7bead13d84534ba1e85d8fa40ad8f4b37e8044ae01a4f7f23bf7fa7a717782",
        180,
        [2001681516, 283930399, 1944242071],
    ),
    "quickstart.bench": (
        "sha256:c09c0bd372cf03d9c8f8056edaed6f8d144a5da69248faf7b5fd4e769c52aae5",
        75,
        [1477497676, 215420737, 158703257],
    ),
    "sorting.bench": (
        "sha256:17f78009b52952f652e7d526fbc462d8132c58702fc01e94ef4e7e8b9a4dacd7",
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
def plans(run_cli_many) -> dict[str, dict]:
    names = sorted(GOLDEN)
    done = run_cli_many([["plan", SPECS / name, "--json"] for name in names], cwd=SPECS)
    out = {}
    for name, (status, stdout, stderr) in zip(names, done, strict=True):
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
