"""A/B comparisons across hosts and requests (Bakshy & Frachtenberg, "Design and Analysis of
Benchmarking Experiments for Distributed Internet Services", WWW 2015).

- :mod:`.designs`: variance components, analytic SEs of the four layouts (§4.2.1), ICC and design
  effect (§3.1);
- :mod:`.bootstrap`: clustered reweighting bootstrap (§5.1–5.2);
- :mod:`.mixed`: crossed random effects by REML (statsmodels MixedLM) and by the method of
  moments, with identifiability detection (§3, Eq. 3–4);
- :mod:`.simulate`: vectorised A/A and A/B simulation (§6, Table 3);
- :mod:`.advisor`: layout and H, R, T under a cost model (§3.1.2);
- :mod:`.warmup`: warm-up and cool-down lengths from repeated requests (§2.2).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchlang.stats.ab.advisor import Advice, CostModel, PlanChoice, advise, advise_from_pilot
    from benchlang.stats.ab.bootstrap import ABBootstrapResult, ab_bootstrap, host_blocks
    from benchlang.stats.ab.designs import (
        VarianceComponents,
        contrast_variance,
        design_effect,
        icc,
        layout_se,
        layout_variance,
    )
    from benchlang.stats.ab.mixed import (
        Identifiability,
        MixedEffectsResult,
        fit_mixed,
        fit_mixed_moments,
        fit_mixed_reml,
        identifiability,
    )
    from benchlang.stats.ab.simulate import AAResult, ABDesign, simulate_aa, simulate_outcomes
    from benchlang.stats.ab.warmup import WarmupSuggestion, suggest_warmup

_WHERE = {
    "AAResult": "simulate",
    "ABBootstrapResult": "bootstrap",
    "ABDesign": "simulate",
    "Advice": "advisor",
    "CostModel": "advisor",
    "Identifiability": "mixed",
    "MixedEffectsResult": "mixed",
    "PlanChoice": "advisor",
    "VarianceComponents": "designs",
    "WarmupSuggestion": "warmup",
    "ab_bootstrap": "bootstrap",
    "advise": "advisor",
    "advise_from_pilot": "advisor",
    "contrast_variance": "designs",
    "design_effect": "designs",
    "fit_mixed": "mixed",
    "fit_mixed_moments": "mixed",
    "fit_mixed_reml": "mixed",
    "host_blocks": "bootstrap",
    "icc": "designs",
    "identifiability": "mixed",
    "layout_se": "designs",
    "layout_variance": "designs",
    "simulate_aa": "simulate",
    "simulate_outcomes": "simulate",
    "suggest_warmup": "warmup",
}
"""Where each name of the package lives: imported on first use (PEP 562), so that a
module needing one piece (``fewclusters`` for the headline) does not load the simulation,
the mixed model and the advisor with it."""


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AAResult",
    "ABBootstrapResult",
    "ABDesign",
    "Advice",
    "CostModel",
    "Identifiability",
    "MixedEffectsResult",
    "PlanChoice",
    "VarianceComponents",
    "WarmupSuggestion",
    "ab_bootstrap",
    "advise",
    "advise_from_pilot",
    "contrast_variance",
    "design_effect",
    "fit_mixed",
    "fit_mixed_moments",
    "fit_mixed_reml",
    "host_blocks",
    "icc",
    "identifiability",
    "layout_se",
    "layout_variance",
    "simulate_aa",
    "simulate_outcomes",
    "suggest_warmup",
]
