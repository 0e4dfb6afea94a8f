"""The empirical A/A check (Bakshy & Frachtenberg, WWW 2015, §6, Fig. 8): over several stores
of one spec whose two versions are identical, how often each ``compare`` called a difference
that cannot exist. An honest interval at level α does so in about α of independent runs; the
binomial band says how far from α that many runs may land by chance (docs/ab-designs.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import attrs
import numpy as np

from benchlang.errors import UserError
from benchlang.report.atomic import write_atomic
from benchlang.stats.figure_data import FigureData


@attrs.frozen
class AARun:
    """One store's interval of one compare; ``no_change`` is 1 on a ratio scale, else 0;
    ``problem`` says why it gave no interval (then it is not counted)."""

    store: str
    test: str
    estimate: float
    low: float
    high: float
    no_change: float
    alpha: float
    false_positive: bool | None
    problem: str | None = None

    def to_dict(self) -> dict:
        from benchlang.jsonout import undefined

        return undefined(
            attrs.asdict(self),
            {"*": self.problem or "the method gave no interval"},
        )


@attrs.frozen
class AACheck:
    """Every run's intervals and, per compare, the tally with its interval and band."""

    runs: tuple[AARun, ...]
    figure: FigureData

    def to_dict(self) -> dict:
        return {
            "runs": [r.to_dict() for r in self.runs],
            "tests": [dict(zip(self.figure.columns, row, strict=True)) for row in self.figure.rows],
            "notes": list(self.figure.notes),
        }


def _store_runs(path: str | Path) -> tuple[str, list[AARun]]:
    from benchlang.app.comparisons import compare_all
    from benchlang.app.stores import load_store
    from benchlang.model import VERSION_FACTOR

    data = load_store(path)
    exp = data.experiment
    if exp.design.layout is None:
        raise UserError(f"{path} holds no A/B layout run (no design {{ versions ... layout }})")
    factor = exp.factor(VERSION_FACTOR)
    texts = [str(factor.text(level)) for level in factor.levels]
    if len(set(texts)) != 1:
        raise UserError(
            f"{path} is an A/B run, not an A/A run: its versions differ ("
            + ", ".join(f"{n} = {t!r}" for n, t in zip(factor.levels, texts, strict=True))
            + "); a real effect would be counted as false positives",
            hint='give both versions the same string, e.g. versions { a "1.00" b "1.00" }',
        )
    runs = []
    for result in compare_all(data):
        test = f"{result.comparison.metric} ({result.comparison.method})"
        out = result.outcome
        if out is None or out.significant is None or out.descriptive_only:
            why = (
                result.problem
                or (out.descriptive_only if out else None)
                or "the method gives an estimate without an interval"
            )
            nan = math.nan
            runs.append(AARun(str(path), test, nan, nan, nan, nan, nan, None, why))
            continue
        alpha = 1 - out.confidence / 100 if math.isfinite(out.confidence) else 0.05
        runs.append(
            AARun(
                str(path),
                test,
                out.estimate,
                out.ci_low,
                out.ci_high,
                1.0 if out.scale == "ratio" else 0.0,
                alpha,
                bool(out.significant),
            )
        )
    return exp.name, runs


def aa_check(stores: Sequence[str | Path]) -> AACheck:
    """Each compare's false positives over A/A ``stores`` (one spec, identical versions)."""
    from benchlang.stats.figure_perflab import aa_empirical

    if len(stores) < 2:
        raise UserError(
            "aa-check counts false positives over several A/A runs; give two stores or more",
            hint="run an A/A spec (identical versions) into several stores, then "
            "benchlang aa-check a1.sqlite a2.sqlite ...",
        )
    seen = [Path(p).resolve() for p in stores]
    twice = sorted({str(p) for p in seen if seen.count(p) > 1})
    if twice:
        raise UserError(
            f"{twice[0]} is given twice: one run counted twice is not two independent A/A runs"
        )
    names, runs = set(), []
    for path in stores:
        name, mine = _store_runs(path)
        names.add(name)
        runs += mine
    if len(names) > 1:
        raise UserError(f"the stores hold different experiments: {', '.join(sorted(names))}")
    tests, notes = [], []
    for test in dict.fromkeys(r.test for r in runs):
        mine = [r for r in runs if r.test == test]
        counted = [r for r in mine if r.false_positive is not None]
        left = len(mine) - len(counted)
        if left:
            why = "; ".join(
                dict.fromkeys(r.problem or "" for r in mine if r.false_positive is None)
            )
            notes.append(f"{test}: {left} of {len(mine)} runs not counted: {why}")
        if counted:
            alpha = counted[0].alpha
            tests.append((test, len(counted), sum(bool(r.false_positive) for r in counted), alpha))
    if not tests:
        raise UserError("no compare gave an interval in these stores", hint="; ".join(notes))
    return AACheck(tuple(runs), aa_empirical(tests, notes))


def ladder_figure(check: AACheck, test: str | None = None) -> FigureData:
    """``aa-ladder`` (Fig. 7) of real runs: each store's interval of one compare (default: the
    first with intervals), ranked, false positives marked."""
    from benchlang.stats.figure_perflab import aa_ladder_runs

    counted = [r for r in check.runs if r.false_positive is not None]
    tests = list(dict.fromkeys(r.test for r in counted))
    name = test or (tests[0] if tests else None)
    if name not in tests:
        raise UserError(
            f"no compare {name!r} gave intervals in these stores",
            hint="compares with intervals: " + (", ".join(tests) or "none"),
        )
    mine = [r for r in counted if r.test == name]
    return aa_ladder_runs(
        name,
        [Path(r.store).name for r in mine],
        np.array([r.estimate for r in mine]),
        np.array([r.low for r in mine]),
        np.array([r.high for r in mine]),
        mine[0].no_change,
        mine[0].alpha,
    )


def export_figure(
    data: FigureData, out: str | Path, data_csv: str | Path | None = None, style: str | None = None
) -> None:
    """Draw ``data`` with its registry drawing (``aa-empirical``, ``aa-ladder``) into ``out``,
    by its suffix, and its rows into ``data_csv``."""
    from benchlang.app.figures import format_of, write_csv
    from benchlang.report.figures import kind_of
    from benchlang.report.figures.render import Palette, draw

    picture = draw(data, kind_of(data.name).draw, Palette([]), format_of(out), style)
    try:
        write_atomic(out, picture)
    except OSError as err:
        raise UserError(f"cannot write {out}: {err.strerror}") from None
    if data_csv is not None:
        write_csv(data, data_csv)
