"""Hidden-factor draws: each hidden factor's level for every trial, from a seeded stream.

DataMill (de Oliveira et al., ICPE 2013, §3) randomises the factors experimenters usually
hold fixed by accident, so that their effect becomes variance (and, stored with each trial, a
term an ANOVA can attribute). A draw is per trial (a fresh level each trial) or per round
(one level for all trials of a round). Levels come from SplitMix64 (design.streams) on the
stream ``hidden:NAME`` indexed by trial or round, so a plan is the same on every machine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from benchlang import model
from benchlang.design.streams import draws, uniforms


def hidden_levels(
    hidden: Sequence[model.Hidden], seed: int, trial_round: np.ndarray
) -> dict[str, list[Any]]:
    """Per hidden factor, its level for each trial (a link order: a tuple of the objects)."""
    out: dict[str, list[Any]] = {}
    for h in hidden:
        unit = np.arange(trial_round.size) if h.per == "trial" else trial_round
        stream = f"hidden:{h.name}"
        if h.kind == "link_order":
            keys = draws(seed, stream, unit[:, None], np.arange(len(h.levels))[None, :])
            orders = np.argsort(keys, axis=1, kind="stable")
            out[h.name] = [tuple(h.levels[i] for i in row) for row in orders.tolist()]
        else:
            index = (uniforms(seed, stream, unit) * len(h.levels)).astype(np.int64)
            out[h.name] = [h.levels[i] for i in index.tolist()]
    return out
