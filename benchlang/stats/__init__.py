"""Replicability statistics (TriScale, Jacob et al., JSys 1(1) 2021): pure functions on numpy
arrays returning frozen result objects. Percent arguments are numbers in (0, 100)."""

from benchlang.stats.cdf import CDFBand, cdf_band
from benchlang.stats.independence import Independence, independence
from benchlang.stats.kpi import KPI, kpi
from benchlang.stats.metric import Metric, metric
from benchlang.stats.sizing import sizing
from benchlang.stats.variability import Variability, variability

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
