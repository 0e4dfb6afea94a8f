"""``compare M by F with trimmed_mean { trim 10% }`` and ``kpi M with hutson { ... }``: two
third-party statistics methods, a comparison and a KPI.

The declarations below are all ``benchlang check`` imports (no numpy work at import); the
implementations in :mod:`benchlang_trimmed_mean.compute` and
:mod:`benchlang_trimmed_mean.quantile_bound` are loaded when results are computed.
"""

from __future__ import annotations

from benchlang.stats.contract import Method, Parameter

TRIMMED_MEAN = Method(
    name="trimmed_mean",
    kind="comparison",
    summary="ratio of trimmed means (treatment / control) with a percentile bootstrap interval",
    source=(
        "Tukey & McLaughlin, Sankhya A 25(3) 1963 (the trimmed mean); Wilcox, Introduction to "
        "Robust Estimation and Hypothesis Testing, 4th ed., 2017, §3.2 and §5.3 (bootstrap "
        "intervals for trimmed means); Efron & Tibshirani, An Introduction to the Bootstrap, "
        "1993, §13.3 (percentile interval)"
    ),
    implementation="benchlang_trimmed_mean.compute:trimmed_mean_ratio",
    parameters=(
        Parameter(
            "trim",
            "percent",
            "share cut from each tail before averaging",
            default=10.0,
            minimum=0.0,
            maximum=45.0,
        ),
        Parameter("confidence", "percent", "confidence of the two-sided interval", default=95.0),
        Parameter(
            "replicates",
            "count",
            "bootstrap replicates",
            default=2000,
            minimum=200,
            maximum=100_000,
        ),
    ),
    min_samples=5,
)


def _hutson_need(settings):
    """Hutson's rank reaches [1, n] from the n of Thompson's sizing (TriScale §4.5, Eq. 4):
    1 - p^n >= C for an upper bound; ``runs auto`` asks this."""
    from benchlang.stats.sizing import sizing

    return sizing(settings["percentile"], settings["confidence"])


HUTSON = Method(
    name="hutson",
    kind="kpi",
    summary="one-sided bound of a percentile at a fractional order statistic (the KPI)",
    source=(
        "Hutson, Calculating nonparametric confidence intervals for quantiles using fractional "
        "order statistics, J. Applied Statistics 26(3) 1999, §2, Eq. 2.1-2.3"
    ),
    implementation="benchlang_trimmed_mean.quantile_bound:hutson",
    parameters=(
        Parameter("percentile", "percentile", "the percentile bounded", required=True),
        Parameter("confidence", "percent", "confidence of the bound", required=True),
        Parameter(
            "bound",
            "choice",
            "which side is bounded (default: the worse side of `better`)",
            choices=("upper", "lower"),
        ),
    ),
    min_samples=2,
    min_samples_for=_hutson_need,
)
