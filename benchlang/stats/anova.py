"""Factorial ANOVA with interactions (DataMill, de Oliveira et al., ICPE 2013, §5: which
factors, and which combinations of factors, explain the variation of a metric).

The table is the one DataMill reports (R's ``summary(aov(...))``): per term degrees of
freedom, sum of squares, mean square (sum of squares / df), F (mean square / residual mean
square) and its p-value, with the model's R² = 1 - SS_residual / SS_total and adjusted R²
(Montgomery, Design and Analysis of Experiments, 8th ed., §3.3; tests/test_anova_table.py
reproduces his Table 3.4). A per-host breakdown (n, mean, standard deviation, the share of the
variance between hosts) says which machine a difference comes from.

Ordinary least squares with categorical factors and type II sums of squares (type III when
the model holds interactions), through statsmodels (``ols`` + ``anova_lm``); the F tests
assume independent, normally distributed residuals of equal variance, so the result
carries a Shapiro–Wilk check of the residuals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs
import numpy as np


@attrs.frozen
class AnovaRow:
    term: str
    df: float
    sum_sq: float
    f: float | None
    p_value: float | None
    eta_squared: float
    mean_sq: float = float("nan")
    """sum_sq / df (Montgomery §3.3, Eq. 3.10)."""


@attrs.frozen
class Anova:
    formula: str
    rows: tuple[AnovaRow, ...]
    n: int
    residuals_normal_p: float | None
    r_squared: float = float("nan")
    """1 - SS_residual / SS_total (corrected): the share of the variance the model explains."""
    adj_r_squared: float = float("nan")

    @property
    def assumptions_hold(self) -> bool:
        return self.residuals_normal_p is None or self.residuals_normal_p > 0.05

    def to_dict(self) -> dict:
        return {
            "formula": self.formula,
            "n": self.n,
            "residuals_normal_p": self.residuals_normal_p,
            "r_squared": self.r_squared,
            "adj_r_squared": self.adj_r_squared,
            "rows": [attrs.asdict(r) for r in self.rows],
        }


def anova(
    values: np.ndarray,
    factors: Mapping[str, Sequence[object]],
    terms: Sequence[str],
    operators: str,
) -> Anova:
    """ANOVA of ``values`` on categorical ``factors``; ``terms`` joined by ``operators``
    (``*`` crosses with interactions, ``+`` adds main effects, ``:`` an interaction only)."""
    import pandas as pd
    import statsmodels.api as sm
    from scipy import stats
    from statsmodels.formula.api import ols

    y = np.asarray(values, dtype=float)
    keep = np.isfinite(y)
    frame = pd.DataFrame(
        {f"f_{k}": np.asarray([str(x) for x in v], dtype=object)[keep] for k, v in factors.items()}
    )
    frame["y"] = y[keep]
    rhs = f"C(f_{terms[0]}, Sum)"
    for op, term in zip(operators, terms[1:], strict=True):
        rhs += f" {op} C(f_{term}, Sum)"
    formula = f"y ~ {rhs}"
    model = ols(formula, data=frame).fit()
    interactions = any(op in "*:" for op in operators)
    table = sm.stats.anova_lm(model, typ=3 if interactions else 2)
    total = float(table["sum_sq"].drop("Intercept", errors="ignore").sum())
    rows = []
    for name, row in table.iterrows():
        if name == "Intercept":
            continue
        label = name.replace("C(f_", "").replace(", Sum)", "")
        f_value = None if np.isnan(row["F"]) else float(row["F"])
        p_value = None if np.isnan(row["PR(>F)"]) else float(row["PR(>F)"])
        rows.append(
            AnovaRow(
                label,
                float(row["df"]),
                float(row["sum_sq"]),
                f_value,
                p_value,
                float(row["sum_sq"]) / total if total > 0 else 0.0,
                float(row["sum_sq"]) / float(row["df"]) if row["df"] > 0 else float("nan"),
            )
        )
    resid = np.asarray(model.resid)
    normal_p = (
        float(stats.shapiro(resid).pvalue)
        if 3 <= resid.size <= 5000 and np.ptp(resid) > 0
        else None
    )
    pretty = (
        "metric ~ "
        + terms[0]
        + "".join(f" {op} {t}" for op, t in zip(operators, terms[1:], strict=True))
    )
    return Anova(
        pretty,
        tuple(rows),
        int(keep.sum()),
        normal_p,
        float(model.rsquared),
        float(model.rsquared_adj),
    )


@attrs.frozen
class HostRow:
    host: str
    n: int
    mean: float
    sd: float
    """Sample standard deviation (ddof 1); nan with one value."""


@attrs.frozen
class HostBreakdown:
    """The metric per host, and the share of its variance between hosts (SS_between /
    SS_total of a one-way decomposition by host)."""

    rows: tuple[HostRow, ...]
    between_share: float


def host_breakdown(values: np.ndarray, hosts: Sequence[str]) -> HostBreakdown:
    """Per-host n, mean and standard deviation of the finite ``values``, hosts sorted."""
    y = np.asarray(values, dtype=float)
    labels = np.asarray([str(h) for h in hosts], dtype=object)
    keep = np.isfinite(y)
    y, labels = y[keep], labels[keep]
    rows = []
    between = 0.0
    grand = float(y.mean()) if y.size else float("nan")
    for host in sorted(set(labels.tolist())):
        mine = y[labels == host]
        sd = float(mine.std(ddof=1)) if mine.size > 1 else float("nan")
        rows.append(HostRow(host, int(mine.size), float(mine.mean()), sd))
        between += mine.size * (float(mine.mean()) - grand) ** 2
    total = float(((y - grand) ** 2).sum()) if y.size else 0.0
    return HostBreakdown(tuple(rows), between / total if total > 0 else 0.0)
