"""Deterministic pseudo-random streams for plans, identical on every machine and numpy.

Plans must not depend on numpy's generator algorithms (which may change between
releases), so every random choice in a plan comes from SplitMix64 (Steele, Lea, Flood,
"Fast splittable pseudorandom number generators", OOPSLA 2014) applied to a counter:
value = splitmix64(seed, stream, i, j), computed in vectorised uint64 arithmetic.
"""

from __future__ import annotations

import hashlib

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * _M1
    z = (z ^ (z >> np.uint64(27))) * _M2
    return z ^ (z >> np.uint64(31))


def stream_key(seed: int, name: str) -> np.uint64:
    """A 64-bit key for a named stream of a seed (``"order"``, ``"coverage"`` ...)."""
    digest = hashlib.sha256(f"{seed}:{name}".encode()).digest()
    return np.uint64(int.from_bytes(digest[:8], "little"))


def draws(seed: int, name: str, *counters: np.ndarray | int) -> np.ndarray:
    """uint64 draws indexed by broadcast integer counters, e.g. (round, configuration)."""
    with np.errstate(over="ignore"):
        z = np.full(np.broadcast_shapes(*(np.shape(c) for c in counters)), stream_key(seed, name))
        for c in counters:
            z = _mix(z + _GOLDEN * (np.asarray(c, dtype=np.uint64) + np.uint64(1)))
        return z


def uniforms(seed: int, name: str, *counters: np.ndarray) -> np.ndarray:
    """Floats in [0, 1) with 53 random bits."""
    return (draws(seed, name, *counters) >> np.uint64(11)).astype(np.float64) / float(1 << 53)
