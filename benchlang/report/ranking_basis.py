"""What a headline ranking rests on, said in words: how the configurations were compared (paired
within rounds, or blocks that ran one after another), the assumption that makes the interval
valid, the independence check behind it, and a note when a configuration's first trials were
far slower than the rest (a warm-up would have absorbed them).

When the run-level independence check fails on a design that ran every configuration in every
round in random order, the ranking may still answer from the within-round contrasts (a drift
that moves every configuration alike cancels from them: ``stats.contrast_independence``,
after Abedi & Brecht, ICPE 2017); :func:`drift_basis` makes that check and :func:`checked`
says which check an answer rests on.

The statistics are in ``stats.headline``, ``stats.block_ranking``, ``stats.slow_start`` and
``stats.contrast_independence``; this module reads the stored trials and the TriScale analysis
and writes the sentences.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from benchlang.run.store import TrialTable
from benchlang.stats.contrast_independence import ContrastIndependence, contrast_independence
from benchlang.stats.slow_start import SlowStart, slow_start

BLOCKS = (
    "assumes no drift between the configuration blocks, which ran one after another (all trials "
    "of one configuration, then all of the next); `benchlang run` with `order random` tests it"
)
DRIFT = (
    "assumes, as the run drifted, (a) that the drift moved every configuration alike (by the "
    "same factor: no drift x configuration interaction), (b) that the within-round contrasts "
    "(each configuration against its round, every round running every configuration once in "
    "random order) are independent across rounds, and (c) that no configuration has a trend of "
    "its own (a warm-up)"
)
ORDER_RANDOM = (
    "under a slow drift the ranking could still answer from its within-round contrasts if "
    "every round ran every configuration in random order: `order random` in the design"
)


@attrs.frozen
class DriftBasis:
    """Whether a metric's ranking may answer from its within-round contrasts when the run-level
    check fails: ``design`` is "" when every round ran every configuration in random order,
    else what to change in the spec; ``contrasts`` their check (None: the design cannot
    support it)."""

    design: str
    contrasts: ContrastIndependence | None = None

    @property
    def answers(self) -> bool:
        return not self.design and self.contrasts is not None and self.contrasts.passed

    def to_dict(self) -> dict[str, Any]:
        return {
            "design": self.design or None,
            "answers": self.answers,
            "contrasts": None if self.contrasts is None else self.contrasts.to_dict(),
        }


def host_codes(hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct host names (sorted) and each trial's index into them: ``np.unique`` with
    ``return_inverse`` without sorting a million strings (a run has a few hosts)."""
    names = np.array(sorted(set(hosts.tolist())))
    if names.size <= 1:
        return names, np.zeros(hosts.size, dtype=np.int64)
    return names, np.searchsorted(names, hosts)


_SHARED: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []


def trial_host_codes(hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`host_codes` of a table's whole ``host`` column, computed once per column: the
    rankings, their bases and the slow-start notes of one analysis all read them."""
    if not (_SHARED and _SHARED[0][0] is hosts):
        _SHARED[:] = [(hosts, *host_codes(hosts))]
    return _SHARED[0][1], _SHARED[0][2]


def _distinct(codes: np.ndarray) -> int:
    return int(np.count_nonzero(np.bincount(codes))) if codes.size else 0


def ran_in_blocks(table: TrialTable, mask: np.ndarray) -> bool:
    """Whether no round holds two of the selected trials' configurations: each configuration
    then ran in blocks of its own (hyperfine, pyperf), and nothing pairs it with another.

    One sort of integer keys (a million trials in a fraction of a second): trials ordered by
    round (host, series, round) and configuration, two neighbours of one round with two
    configurations answer no."""
    if not mask.any():
        return False
    host_code = trial_host_codes(table.host)[1][mask]
    configuration = table.configuration[mask]
    rounds = _joint_key((host_code, table.series[mask], table.round[mask]))
    key = None if rounds is None else _joint_key((rounds, configuration))
    if key is None:
        order = np.lexsort((configuration, table.round[mask], table.series[mask], host_code))
        round_key = np.stack([host_code, table.series[mask], table.round[mask]])[:, order]
        same_round = np.all(round_key[:, 1:] == round_key[:, :-1], axis=0)
        configuration = configuration[order]
        return not bool(np.any(same_round & (configuration[1:] != configuration[:-1])))
    key.sort()
    width = int(configuration.max()) + 1
    same_round = key[1:] // width == key[:-1] // width
    return not bool(np.any(same_round & (key[1:] != key[:-1])))


def _joint_key(columns: tuple[np.ndarray, ...]) -> np.ndarray | None:
    """One int64 per trial ordering as the non-negative integer ``columns`` do in ``lexsort``
    (the first the most significant): a single sort instead of one per column; None when a
    column is negative or the product of their ranges leaves int64."""
    key = np.zeros(columns[0].size, dtype=np.int64)
    span = 1
    for column in columns:
        low, high = (int(column.min()), int(column.max())) if column.size else (0, 0)
        span *= high + 1
        if low < 0 or span >= 2**62:
            return None
        key = key * (high + 1) + column
    return key


def assumption(table: TrialTable, mask: np.ndarray, blocks: bool) -> str:
    """The assumption the ranking's interval makes, in words."""
    if blocks:
        return BLOCKS
    hosts = _distinct(trial_host_codes(table.host)[1][mask])
    orders = sorted(set(table.order_kind[mask].tolist()))
    order = " and ".join(orders) if orders else "fixed"
    out = (
        f"assumes the rounds, each running every configuration once ({order} order), are "
        "independent of each other"
    )
    if "random" not in orders:
        out += " and no effect of a trial's position in its round (`order random` removes it)"
    where = "one host: the ratios hold for this host" if hosts == 1 else f"{hosts} hosts"
    return f"{out}; measured on {where}"


def drift_design(table: TrialTable, mask: np.ndarray) -> str:
    """ "" when the selected trials ran every configuration in every round in random order (the
    design under which a common drift cancels from the within-round contrasts), else what to
    change in the spec."""
    orders = set(table.order_kind[mask].tolist())
    if not mask.any() or ran_in_blocks(table, mask) or orders != {"random"}:
        return ORDER_RANDOM
    return ""


def drift_basis(table: TrialTable, values: np.ndarray, metric: str, seed: int = 0) -> DriftBasis:
    """The drift basis of one metric (``values``, one per trial of ``table``): the design, and
    when it supports an answer, the within-round contrasts' independence check over every
    configuration (rounds: host x series x round, in trial order within each host's series)."""
    mask = table.ok & np.isfinite(values) & (values > 0)
    design = drift_design(table, mask)
    if design:
        return DriftBasis(design)
    _, host = host_codes(table.host[mask])
    series = table.series[mask].astype(np.int64)
    block = host * (int(series.max(initial=0)) + 1) + series
    rounds = block * (int(table.round[mask].max(initial=0)) + 1) + table.round[mask]
    check = contrast_independence(
        metric,
        values[mask],
        table.configuration[mask],
        rounds,
        block,
        table.trial[mask],
        seed=seed,
    )
    return DriftBasis("", check)


def with_drift_bases(data, results: list) -> list:
    """``results`` (``report.analysis``'s) with each metric's :class:`DriftBasis` where its
    run-level independence check failed (``drift``); the others unchanged."""
    bases = {}
    for metric in dict.fromkeys(r.metric for r in results):
        verdict = next((r.analysis.independence for r in results if r.metric == metric), None)
        if verdict is not None and not verdict.passed and verdict.made:
            values = data.metrics[metric].values
            bases[metric] = drift_basis(data.table, values, metric, data.plan.seed or 0)
    return [attrs.evolve(r, drift=bases[r.metric]) if r.metric in bases else r for r in results]


def checked(group, results: list):
    """A headline ``RankingGroup`` with the independence check of its configurations' trials
    said, and its intervals dropped (descriptive only) when that check failed, unless the
    within-round contrasts answer (the run-level check failed, the design interleaved every
    configuration in random order, and the contrasts' own check passed): the intervals are then
    kept and the assumption says (a)-(c) in words."""
    mine = [r for r in results if r.configuration in group.labels]
    passed, words = independence_check(mine)
    ranking = group.ranking
    if passed is False and not ranking.descriptive_only:
        drift = next((d for r in mine if (d := getattr(r, "drift", None)) is not None), None)
        if drift is not None and drift.answers and ranking.scheme == "paired":
            _, on, where = group.assumption.rpartition("; measured on ")
            return attrs.evolve(
                group,
                assumption=f"{DRIFT}{on}{where}" if on else DRIFT,
                check=f"{words}, so the intervals rest on the within-round contrasts, whose "
                f"check passed: {drift.contrasts.summary()}",
            )
        if drift is not None and drift.contrasts is not None:
            words += f", and so did the within-round contrasts' check: {drift.contrasts.summary()}"
        ranking = ranking.without_intervals(words)
        if drift is not None and drift.design:
            reasons = (words, drift.design, *ranking.reasons[1:])
            ranking = attrs.evolve(ranking, reasons=reasons)
    return attrs.evolve(group, ranking=ranking, check=words)


def independence_check(results: list) -> tuple[bool | None, str]:
    """(passed, in words) of the independence verdict the analysis gave these configurations:
    the run-level verdict of their metric when the analysis carries one (``independence``),
    else each ``MetricAnalysis``'s reasons (one naming independence is a failure, or an
    untested sequence); None when no configuration was analysed."""
    if not results:
        return None, "no independence check was made"
    run = next((v for r in results if (v := getattr(r.analysis, "independence", None))), None)
    if run is not None:
        if run.passed:
            return True, "the independence check of the run passed (run-level verdict above)"
        failed = ", ".join(f"{t.name} p = {t.p:.2g}" for t in run.tests if t.rejected)
        return (
            False,
            f"the run-level independence check failed ({failed or 'no test could be made'})",
        )
    dependent = [
        r.configuration for r in results if any("independen" in x for x in r.analysis.reasons)
    ]
    if dependent:
        return (
            False,
            f"the independence check failed for {', '.join(dependent)} (its reasons above)",
        )
    return True, "the independence check of every configuration's trials in time order passed"


@attrs.frozen
class SlowStartNote:
    """A configuration whose first trials were far slower than the rest."""

    label: str
    check: SlowStart
    host: str | None = None
    """The host, when the trials ran on several."""

    def to_dict(self) -> dict[str, Any]:
        return {"configuration": self.label, "host": self.host, **self.check.to_dict()}

    def sentence(self, number) -> str:
        c = self.check
        first = "first trial" if c.leading == 1 else f"first {c.leading} trials"
        return (
            f"Note: {self.label}{f' on {self.host}' if self.host else ''}: the {first} ran far worse than the rest ({number(c.first)} "
            f"against a median of {number(c.median)}; more than {c.threshold:g} robust standard "
            f'deviations of the logs): a cold start? "warmup {c.leading}" in the design (hyperfine: '
            f"--warmup {c.leading}) runs such trials first and leaves them out of the analysis"
        )


def slow_starts(
    table: TrialTable, values: np.ndarray, better: str = "lower"
) -> tuple[SlowStartNote, ...]:
    """The configurations (of ``values``, one metric value per trial) whose first trials, in
    the order they ran on each host, were far worse than the rest (``stats.slow_start``; for
    ``better higher`` on the reciprocals, so that a slow start is a high value)."""
    if better == "higher":
        with np.errstate(divide="ignore"):
            values = 1.0 / values
    ok = np.flatnonzero(table.ok & np.isfinite(values) & (values > 0))
    host = trial_host_codes(table.host)[1][ok]
    several = _distinct(host) > 1
    config = table.configuration[ok]
    # each (host, configuration) in turn, its trials in the order they ran
    columns = (host, config, table.series[ok], table.round[ok], table.position[ok])
    key = _joint_key(columns)
    order = np.lexsort(columns[::-1]) if key is None else np.argsort(key, kind="stable")
    key = host[order] * (int(config.max(initial=0)) + 1) + config[order]
    starts = np.flatnonzero(np.diff(key, prepend=-1))
    notes = []
    for mine in np.split(ok[order], starts[1:]) if ok.size else []:
        check = slow_start(values[mine])
        if check is not None and check.flagged:
            if better == "higher":
                check = attrs.evolve(check, first=1 / check.first, median=1 / check.median)
            where = str(table.host[mine[0]]) if several else None
            notes.append(SlowStartNote(str(table.label[mine[0]]), check, where))
    return tuple(notes)
