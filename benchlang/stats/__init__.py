"""Replicability statistics (TriScale, Jacob et al., JSys 1(1) 2021): pure functions on numpy
arrays returning frozen result objects. Percent arguments are numbers in (0, 100).

The names below load on first use (PEP 562): importing ``benchlang.stats.sizing`` for the
checker must not pull in scipy through the KPI, CDF and independence modules. Five of them
share their module's name (``kpi`` in ``kpi.py``); the package attribute is the function, as
it was with eager imports, so the import system's binding of the submodule is declined.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchlang.stats.cdf import CDFBand, cdf_band
    from benchlang.stats.independence import Independence, independence
    from benchlang.stats.kpi import KPI, kpi
    from benchlang.stats.metric import Metric, metric
    from benchlang.stats.sizing import sizing
    from benchlang.stats.variability import Variability, variability

_HOMES = {
    "KPI": "kpi",
    "CDFBand": "cdf",
    "Independence": "independence",
    "Metric": "metric",
    "Variability": "variability",
    "cdf_band": "cdf",
    "independence": "independence",
    "kpi": "kpi",
    "metric": "metric",
    "sizing": "sizing",
    "variability": "variability",
}

__all__ = [
    "KPI",
    "CDFBand",
    "Independence",
    "Metric",
    "Variability",
    "cdf_band",
    "independence",
    "kpi",
    "metric",
    "sizing",
    "variability",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in _HOMES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])
