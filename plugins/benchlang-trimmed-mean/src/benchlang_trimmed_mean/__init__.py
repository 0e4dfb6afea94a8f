"""``compare M by F with trimmed_mean { trim 10% }``: a third-party statistics method.

The declaration below is all ``benchlang check`` imports (no numpy work at import); the
implementation in :mod:`benchlang_trimmed_mean.compute` is loaded when results are computed.
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
