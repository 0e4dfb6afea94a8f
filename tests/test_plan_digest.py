"""The plan's SHA-256 is the same digest whichever implementation makes it: CPython's own
below ``OWN_SHA256_BELOW`` bytes, OpenSSL's (hashlib) from there (benchlang/plan/plan.py)."""

from __future__ import annotations

import hashlib
import random

from benchlang.plan.plan import OWN_SHA256_BELOW, sha256_hex


def test_both_sides_of_the_threshold_give_hashlibs_digest():
    rng = random.Random(53)
    for size in (0, 1, 55, 64, 1000, OWN_SHA256_BELOW - 1, OWN_SHA256_BELOW, 3 * OWN_SHA256_BELOW):
        data = rng.randbytes(size)
        assert sha256_hex(data) == hashlib.sha256(data).hexdigest()
