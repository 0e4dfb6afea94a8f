"""Hidden-factor draws: each hidden factor's level for every trial, dealt evenly across rounds.

DataMill (de Oliveira et al., ICPE 2013, §3) randomises the factors experimenters usually
hold fixed by accident, so that their effect becomes variance (and, stored with each trial, a
term an ANOVA can attribute). Independent draws can leave a factor constant over a short run
(4 rounds of a two-level factor: 1 run in 8), which confounds its effect with everything else.
So the levels are *dealt* rather than drawn (stratified sampling; for several factors Latin
hypercube sampling, McKay, Beckman & Conover, Technometrics 1979): in each stratum (per round:
the rounds running the same configurations; per trial: the trials of one configuration) every
level appears floor(n/L) or ceil(n/L) times, in a seeded order. Several factors of the same
``per`` are crossed in full blocks (every combination once per block of their product of level
counts), the remainder dealt factor by factor; a remainder shorter than the levels takes one
level from each of its equal-probability strata of the level range (a continuous factor such
as ``sizes 0..65536``). A link order is dealt as rotations of a seeded base order (a Latin
square per block of as many units as objects: every object once at every position).

Every choice comes from SplitMix64 (design.streams): ``hidden-order:PER`` orders the units of
a stratum, ``hidden:NAME`` a factor's remainder, ``hidden-pick:NAME`` the level inside a
stratum of levels or a link order's base; the same spec and seed give the same plan anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchlang import model
from benchlang.design.streams import draws, uniforms

_BIG = 1 << 62


def hidden_levels(
    hidden: Sequence[model.Hidden],
    seed: int,
    trial_round: np.ndarray,
    trial_configuration: np.ndarray,
) -> dict[str, list[Any]]:
    """Per hidden factor, its level for each trial (a link order: a tuple of the objects).

    ``trial_round`` must number the rounds 0, 1, ... in trial order (as plans do)."""
    out: dict[str, list[Any]] = {}
    for per in ("round", "trial"):
        group = [h for h in hidden if h.per == per]
        if not group:
            continue
        if per == "round":
            starts = np.flatnonzero(np.r_[True, trial_round[1:] != trial_round[:-1]])
            stratum = np.minimum.reduceat(trial_configuration, starts)
            unit_of_trial = trial_round
        else:
            stratum = trial_configuration
            unit_of_trial = np.arange(trial_round.size)
        dealt = deal(group, seed, per, np.asarray(stratum, dtype=np.int64))
        for h in group:
            index = dealt[h.name][unit_of_trial]
            levels = np.empty(len(h.levels), dtype=object)
            levels[:] = h.levels
            if h.kind == "link_order":
                out[h.name] = list(map(tuple, levels[index].tolist()))
            else:
                out[h.name] = levels[index].tolist()
    return {h.name: out[h.name] for h in hidden}


def deal(
    group: Sequence[model.Hidden], seed: int, per: str, stratum: np.ndarray
) -> dict[str, np.ndarray]:
    """Level indices of each factor of ``group`` for units in ``stratum`` (one entry per
    unit): balanced within each stratum, crossed in full blocks, in a seeded order.
    A link order's entry is an (units, objects) array of object indices."""
    _, code = np.unique(stratum, return_inverse=True)
    size = np.bincount(code)[code]
    units = np.arange(stratum.size)
    out: dict[str, np.ndarray] = {}
    discrete = [h for h in group if h.kind != "link_order"]
    if discrete:
        counts = [len(h.levels) for h in discrete]
        product = min(math.prod(counts), _BIG)
        position = _ranks(code, draws(seed, f"hidden-order:{per}", units))
        blocks = size // product
        crossed = position < blocks * product
        combination = np.where(crossed, position % product, 0)
        rest_size = size - blocks * product
        stride = 1
        for h, n_levels in zip(discrete, counts, strict=True):
            in_block = (combination // stride) % n_levels
            stride = min(stride * n_levels, _BIG)
            keys = draws(seed, f"hidden:{h.name}", units)
            order = np.zeros(stratum.size, dtype=np.int64)
            loose = ~crossed
            order[loose] = _ranks(code[loose], keys[loose])
            pick = uniforms(seed, f"hidden-pick:{h.name}", units)
            spread = balanced(order, rest_size, n_levels, pick)
            out[h.name] = np.where(crossed, in_block, spread)
    for h in group:
        if h.kind == "link_order":
            out[h.name] = _link_orders(h, seed, code, units)
    return out


def balanced(k: np.ndarray, m: np.ndarray, n_levels: int, pick: np.ndarray) -> np.ndarray:
    """The level of the ``k``-th of ``m`` units: floor(m/L) full passes over the L levels,
    then the last m mod L units one level each from consecutive equal-probability strata of
    the levels (level chosen in its stratum by ``pick``, uniform in [0, 1))."""
    full = (m // n_levels) * n_levels
    left = np.maximum(m - full, 1)
    t = k - full
    low = (t * n_levels) // left
    high = ((t + 1) * n_levels) // left
    inside = low + np.floor(pick * (high - low)).astype(np.int64)
    return np.where(k < full, k % n_levels, inside)


def _link_orders(h: model.Hidden, seed: int, code: np.ndarray, units: np.ndarray) -> np.ndarray:
    """Rotations of a seeded base order per block of as many units as objects."""
    k = len(h.levels)
    position = _ranks(code, draws(seed, f"hidden:{h.name}", units))
    block, shift = position // k, position % k
    keys = draws(
        seed, f"hidden-pick:{h.name}", code[:, None], block[:, None], np.arange(k)[None, :]
    )
    base = np.argsort(keys, axis=1, kind="stable")
    columns = (np.arange(k)[None, :] + shift[:, None]) % k
    return np.take_along_axis(base, columns, axis=1)


def _ranks(group: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Each element's rank by ``key`` among the elements of its ``group``."""
    order = np.argsort(key, kind="stable")
    order = order[np.argsort(group[order], kind="stable")]
    ordered = group[order]
    rank = np.empty(group.size, dtype=np.int64)
    rank[order] = np.arange(group.size) - np.searchsorted(ordered, ordered, side="left")
    return rank


def hidden_reason(hidden: Sequence[model.Hidden]) -> str:
    """What the plan's ``hidden`` entry says about the draws."""
    parts = [
        f"{h.name} per {h.per} from {len(h.levels)} "
        + ("objects (rotations of seeded orders)" if h.kind == "link_order" else "levels")
        for h in hidden
    ]
    return (
        "; ".join(parts)
        + ", each level dealt evenly over the rounds (per trial: over each configuration's"
        " trials) in a seeded order, factors of the same 'per' crossed in full blocks"
        " (DataMill's hidden factors, de Oliveira et al. ICPE 2013 §3; stratified as Latin"
        " hypercube sampling, McKay et al. 1979)"
    )
