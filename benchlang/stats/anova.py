"""Factorial ANOVA with interactions (DataMill, de Oliveira et al., ICPE 2013, §5: which
factors, and which combinations of factors, explain the variation of a metric).

The table is the one DataMill reports (R's ``summary(aov(...))``): per term degrees of
freedom, sum of squares, mean square (sum of squares / df), F (mean square / residual mean
square) and its p-value, with the model's R² = 1 - SS_residual / SS_total and adjusted R²
(Montgomery, Design and Analysis of Experiments, 8th ed., §3.3; tests/test_anova_table.py
reproduces his Table 3.4). A per-host breakdown (n, mean, standard deviation, the share of the
variance between hosts) says which machine a difference comes from.

DataMill's "reduced" models (§5, Tables 3 and 4) fit main effects and two-factor interactions
only: ``(A + B + C)^2`` (``order``) fits every interaction up to that order, as R's and patsy's
``(a + b + c)^2``, and keeps the terms that are not significant (no stepwise dropping by p-value,
whose refitted p-values would overstate significance: Harrell, Regression Modeling Strategies,
2nd ed., 2015, §4.3). Its Table 4 fits the model on each host apart (``anova_by_host``).

Ordinary least squares with categorical factors and type II sums of squares (type III when
the model holds interactions), through statsmodels (``ols`` + ``anova_lm``); the F tests
assume independent, normally distributed residuals of equal variance, so the result
carries a Shapiro–Wilk check of the residuals.

Aliased terms are found before the fit (``estimable_terms``): a term whose design columns lie
in the span of the terms before it (the intercept, main effects, then interactions, as patsy
orders them) has no degrees of freedom of its own, as when each host has one CPU model and
``host`` is determined by ``cpu``. Such a term (or one only partly estimable, an interaction
with unmeasured combinations) is dropped and named in ``dropped``; fitting it would make the
design matrix singular, give it another term's sum of squares and a library warning
(Montgomery §14.1 on nested factors, §15.2 on empty cells; R's ``aov`` likewise drops
aliased terms, ``alias()``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from benchlang.jsonout import undefined


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
    dropped: tuple[str, ...] = ()
    """One sentence per term left out of the fit because it is aliased (see the module)."""

    @property
    def assumptions_hold(self) -> bool:
        return self.residuals_normal_p is None or self.residuals_normal_p > 0.05

    def to_dict(self) -> dict[str, Any]:
        fit = "undefined: no residual degrees of freedom"
        return {
            "formula": self.formula,
            "n": self.n,
            "residuals_normal_p": self.residuals_normal_p,
            **undefined(
                {"r_squared": self.r_squared, "adj_r_squared": self.adj_r_squared},
                {"*": fit},
            ),
            "rows": [
                undefined(attrs.asdict(r), {"mean_sq": "the term has no degrees of freedom"})
                for r in self.rows
            ],
            "dropped": list(self.dropped),
        }


def estimable_terms(design: Any) -> tuple[list[int], list[str]]:
    """Which of a patsy design matrix's terms to fit, and why the others are dropped.

    A term is kept when its columns add their full count to the rank of everything before it
    (Intercept first); a term adding nothing is determined by an earlier term (named when one
    alone determines it), one adding part of its columns is only partly estimable."""
    x = np.asarray(design, dtype=float)
    info = design.design_info
    names = [_label(n) for n in info.term_names]
    keep: list[int] = []
    notes: list[str] = []
    rank = 0
    for i, (_term, where) in enumerate(info.term_slices.items()):
        columns = x[:, where]
        upto = x[:, : where.stop]
        added = int(np.linalg.matrix_rank(upto)) - rank
        rank += added
        width = columns.shape[1]
        if added == width or i == 0:
            keep.append(i)
            continue
        if added == 0:
            by = _determined_by(x, info, i, width)
            notes.append(f"{names[i]} is determined by {by}: its term is dropped")
        elif ":" in names[i]:
            notes.append(
                f"{names[i]} is only partly estimable ({added} of its {width} degrees of "
                "freedom: not every combination of its levels was measured): its term is dropped"
            )
        else:
            by = _determined_by(x, info, i, 1)
            notes.append(
                f"{names[i]} is partly determined by {by} ({added} of its {width} degrees of "
                "freedom left: its levels are nested in it): its term is dropped"
            )
    return keep, notes


def _determined_by(x: np.ndarray, info: Any, i: int, lost: int) -> str:
    """The first earlier term that alone (with the intercept) takes at least ``lost`` of
    term ``i``'s degrees of freedom, else the earlier terms together."""
    slices = list(info.term_slices.values())
    names = [_label(n) for n in info.term_names]
    columns = x[:, slices[i]]
    for j in range(1, i):
        base = np.hstack([x[:, slices[0]], x[:, slices[j]]])
        gained = np.linalg.matrix_rank(np.hstack([base, columns])) - np.linalg.matrix_rank(base)
        if columns.shape[1] - gained >= lost:
            return names[j]
    return " and ".join(names[1:i]) + " together"


def _label(name: str) -> str:
    return name.replace("C(f_", "").replace(", Sum)", "")


def anova(
    values: np.ndarray,
    factors: Mapping[str, Sequence[object]],
    terms: Sequence[str],
    operators: str,
    order: int | None = None,
) -> Anova:
    """ANOVA of ``values`` on categorical ``factors``; ``terms`` joined by ``operators``
    (``*`` crosses with interactions, ``+`` adds main effects, ``:`` an interaction only), or
    with ``order`` the sum of ``terms`` with every interaction up to that order."""
    import pandas as pd
    import statsmodels.api as sm
    from patsy import dmatrix
    from scipy import stats
    from statsmodels.formula.api import ols

    y = np.asarray(values, dtype=float)
    keep = np.isfinite(y)
    frame = pd.DataFrame(
        {f"f_{k}": np.asarray([str(x) for x in v], dtype=object)[keep] for k, v in factors.items()}
    )
    frame["y"] = y[keep]
    if order is None:
        rhs = f"C(f_{terms[0]}, Sum)"
        for op, term in zip(operators, terms[1:], strict=True):
            rhs += f" {op} C(f_{term}, Sum)"
    else:
        rhs = "(" + " + ".join(f"C(f_{t}, Sum)" for t in terms) + f")**{order}"
    design = dmatrix(rhs, frame)
    kept, dropped = estimable_terms(design)
    names = design.design_info.term_names
    fitted = [names[i] for i in kept if names[i] != "Intercept"]
    if design.shape[0] <= np.linalg.matrix_rank(np.asarray(design)[:, _columns(design, kept)]):
        raise ValueError(
            f"no residual degrees of freedom: {design.shape[0]} trials for a model of "
            "that many parameters; run more trials (design { runs N })"
        )
    model = ols("y ~ " + (" + ".join(fitted) or "1"), data=frame).fit()
    interactions = any(":" in name for name in fitted)
    table = sm.stats.anova_lm(model, typ=3 if interactions else 2)
    total = float(table["sum_sq"].drop("Intercept", errors="ignore").sum())
    rows = []
    for name, row in table.iterrows():
        if name == "Intercept":
            continue
        label = _label(name)
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
    if order is None:
        pretty = "metric ~ " + terms[0]
        pretty += "".join(f" {op} {t}" for op, t in zip(operators, terms[1:], strict=True))
    else:
        pretty = f"metric ~ ({' + '.join(terms)})^{order}"
    return Anova(
        pretty,
        tuple(rows),
        int(keep.sum()),
        normal_p,
        float(model.rsquared),
        float(model.rsquared_adj),
        tuple(dropped),
    )


def _columns(design: Any, kept: list[int]) -> np.ndarray:
    slices = list(design.design_info.term_slices.values())
    return np.concatenate([np.arange(design.shape[1])[slices[i]] for i in kept])


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


@attrs.frozen
class HostAnova:
    """One host's table (DataMill Table 4), or why it has none; ``notes`` name the terms
    left out because they have one level on that host."""

    host: str
    anova: Anova | None
    problem: str | None = None
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "anova": None if self.anova is None else self.anova.to_dict(),
            "problem": self.problem,
            "notes": list(self.notes),
        }


@attrs.frozen
class AnovaByHost:
    """The model fitted on each host apart, hosts sorted (``anova ... by host``)."""

    tables: tuple[HostAnova, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"tables": [t.to_dict() for t in self.tables]}


def anova_by_host(
    values: np.ndarray,
    factors: Mapping[str, Sequence[object]],
    terms: Sequence[str],
    operators: str,
    hosts: Sequence[str],
    order: int | None = None,
) -> AnovaByHost:
    """``anova`` on each host's values (DataMill, de Oliveira et al., ICPE 2013, Table 4). A
    term with one level on a host (a CPU model from the hosts' facts) is left out of that
    host's model, with its interactions, and named; a host whose model cannot be fitted says
    why."""
    y = np.asarray(values, dtype=float)
    labels = np.asarray([str(h) for h in hosts], dtype=object)
    columns = {k: np.asarray([str(x) for x in v], dtype=object) for k, v in factors.items()}
    tables = []
    for host in sorted(set(labels.tolist())):
        mine = (labels == host) & np.isfinite(y)
        single = [t for t in terms if np.unique(columns[t][mine]).size < 2]
        notes = tuple(f"{t} has one level on host {host}: its terms are left out" for t in single)
        kept = [i for i, t in enumerate(terms) if t not in single]
        if not kept:
            tables.append(HostAnova(host, None, "no term varies on this host", notes))
            continue
        names = [terms[i] for i in kept]
        ops = "".join(operators[i - 1] for i in kept[1:]) if order is None else ""
        try:
            table = anova(
                y[mine],
                {t: columns[t][mine] for t in names},
                names,
                ops,
                None if order is None else min(order, len(names)),
            )
        except (ValueError, np.linalg.LinAlgError) as err:
            tables.append(HostAnova(host, None, str(err), notes))
            continue
        tables.append(HostAnova(host, table, None, notes))
    return AnovaByHost(tuple(tables))
