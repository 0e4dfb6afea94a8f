"""Known answers for the plan's random streams (benchlang.design.streams): SplitMix64 on a
counter, keyed by sha256 of "seed:name". Every random choice of a plan (orders, trial seeds,
coverage, layouts, series start times) comes from these functions, so a change to any value
below changes the plans of existing specs and breaks ``--resume`` of every existing store.

The values are checked twice: against literals recorded from the implementation, and against
an independent pure-Python SplitMix64 (Steele, Lea & Flood, OOPSLA 2014) written from the paper,
so that the literals are not merely a snapshot of whatever the code did.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from benchlang.design.streams import draws, stream_key, uniforms

MASK = (1 << 64) - 1
BREAKS_RESUME = (
    "benchlang.design.streams changed: every plan drawn from it changes, so no existing store "
    "can be resumed (--resume matches the plan hash) and published specs give other plans. "
    "Revert, or bump the plan format and update tests/test_streams_golden.py and "
    "tests/test_golden_plans.py together."
)


def reference_key(seed: int, name: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{name}".encode()).digest()[:8], "little")


def reference_mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def reference_draw(seed: int, name: str, *counters: int) -> int:
    z = reference_key(seed, name)
    for c in counters:
        z = reference_mix((z + 0x9E3779B97F4A7C15 * (c + 1)) & MASK)
    return z


KEYS = {
    (0, "order"): 0x6DDE3FB8BFF8EA23,
    (7, "trial"): 0xF512BDFE9AD6EF8A,
    (2015, "layout"): 0x668FFA295D53E8AC,
    (2**63 - 1, "coverage"): 0xA38DD44F25584DE3,
}

DRAWS = {
    (0, "order"): [2865053152783143735, 12735913116177969007, 8009070597628710473],
    (7, "trial"): [17194313300868465085, 2438943560970721593, 16700912224568948817],
    (2015, "layout"): [17075656933368955956, 5522444333178675932, 1335957066105749876],
    (2**63 - 1, "coverage"): [3568133543320171608, 11034748601062950112, 7716507846241531429],
}

# draws(7, "order", i, j) for (i, j) in (0,0), (0,1), (1,0), (1,1)
PAIRS = [15466096915785567827, 7792588587596357857, 17089219145880820256, 8676637237989988837]

UNIFORMS = [
    "0x1.1bb42e568605ep-1",
    "0x1.59eb23dc9214ap-1",
    "0x1.429cbde968b00p-3",
    "0x1.cc33b44700b14p-1",
]


@pytest.mark.parametrize(("seed", "name"), sorted(KEYS))
def test_stream_keys(seed, name):
    assert int(stream_key(seed, name)) == KEYS[seed, name] == reference_key(seed, name), (
        BREAKS_RESUME
    )


@pytest.mark.parametrize(("seed", "name"), sorted(DRAWS))
def test_draws_on_one_counter(seed, name):
    got = [int(x) for x in draws(seed, name, np.arange(3))]
    assert got == DRAWS[seed, name], BREAKS_RESUME
    assert got == [reference_draw(seed, name, i) for i in range(3)], BREAKS_RESUME


def test_draws_on_two_broadcast_counters():
    got = draws(7, "order", np.arange(2)[:, None], np.arange(2)[None, :])
    assert got.shape == (2, 2)
    assert [int(x) for x in got.ravel()] == PAIRS, BREAKS_RESUME
    assert [reference_draw(7, "order", i, j) for i in range(2) for j in range(2)] == PAIRS


def test_uniforms_take_the_top_53_bits():
    got = uniforms(11, "trial", np.arange(4))
    assert [float(x).hex() for x in got] == UNIFORMS, BREAKS_RESUME
    assert [float.fromhex(u) for u in UNIFORMS] == [
        (reference_draw(11, "trial", i) >> 11) / float(1 << 53) for i in range(4)
    ]
    assert np.all((got >= 0) & (got < 1))
