"""Applies a spec's stopping rule during a run: one sample stream per (series, configuration),
fed with each finished trial's metric value; a stopped configuration's remaining trials of
that series are skipped. Rules are the pure ones of benchlang.stats.stopping."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np

from benchlang import model
from benchlang.run.store import TrialRecord
from benchlang.run.trial_metric import evaluate, series_metric
from benchlang.stats.registry import statistics_methods
from benchlang.stats.stopping import Action, AdaptiveState, Decision


def build_rule(stop: model.Stop) -> Any:
    """The rule of a spec's stop statement, built by its stopping method's implementation
    from its checked settings (docs/plugins.md; built-ins and plugins alike): an object whose
    ``step(samples, state)`` returns ``(Decision, state)``. None for ``stop after``, whose
    count sizes the plan instead."""
    if stop.kind == "after":
        return None
    method = statistics_methods()[stop.kind]
    return method.load()(**{k: v for k, v in stop.settings.items() if k != "metric"})


class StoppingController:
    """Tracks samples and decisions; ``stopped`` maps (series, configuration) to its Decision."""

    def __init__(self, experiment: model.Experiment) -> None:
        self.experiment = experiment
        stop = experiment.stop
        self.rule = build_rule(stop) if stop is not None else None
        self.metric = (
            experiment.metric(stop.settings["metric"])
            if stop is not None and self.rule is not None
            else None
        )
        self.samples: dict[tuple[int, int], list[float]] = {}
        self.states: dict[tuple[int, int], AdaptiveState | None] = {}
        self.stopped: dict[tuple[int, int], Decision] = {}

    @property
    def active(self) -> bool:
        return self.rule is not None

    def value_of(self, record: TrialRecord) -> float:
        """The trial's value of the metric the rule watches (nan when failed or missing)."""
        m = self.metric
        if record.status != "ok" or m is None:
            return math.nan
        if m.expression is not None:
            return float(evaluate(m.expression, lambda n: record.measures.get(n, math.nan)))
        if m.measure in record.series_values:
            series = np.asarray(record.series_values[m.measure], dtype=float)
            if series.size == 0:
                return math.nan
            return float(series_metric(m, series, self.experiment.design.runtime).value)
        return float(record.measures.get(m.measure, math.nan))

    def is_stopped(self, series: int, configuration: int) -> bool:
        return (series, configuration) in self.stopped

    def restore(
        self, series: int, configuration: int, values: list[float], decision: Decision | None
    ) -> None:
        """Rebuild state on resume from stored values (and a stored decision, if any)."""
        self.samples[(series, configuration)] = [v for v in values if math.isfinite(v)]
        if decision is not None:
            self.stopped[(series, configuration)] = decision

    def observe(self, series: int, configuration: int, value: float) -> Decision | None:
        """Add one trial's value; return the Decision when the rule stops the stream now."""
        if self.rule is None:
            return None
        key = (series, configuration)
        samples = self.samples.setdefault(key, [])
        if not math.isfinite(value):
            return None
        samples.append(value)
        x = np.asarray(samples, dtype=float)
        decision, self.states[key] = self.rule.step(x, self.states.get(key))
        if decision.stopped:
            self.stopped[key] = decision
            return decision
        return None


def decision_from_row(action: str, rule: str, detected_class: str | None, reason: str) -> Decision:
    """A decision as the store keeps it (written from a ``Decision``, so its action is one)."""
    return Decision(
        action=cast(Action, action), reason=reason, detected_class=detected_class, rule=rule
    )


def describe(decision: Decision) -> dict[str, Any]:
    return {
        "action": decision.action,
        "rule": decision.rule,
        "class": decision.detected_class,
        "reason": decision.reason,
    }
