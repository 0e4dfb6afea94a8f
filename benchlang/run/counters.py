"""Counters of the command alone from ``perf stat`` (DataMill, de Oliveira et al. ICPE 2013,
§4: time, page faults and cache misses collected for every job).

A benchmark that declares a counter (``measure m = cache_misses``, model.COUNTERS) runs its
trials as ``perf stat -x, -e EVENTS,duration_time -- COMMAND`` (perf-stat(1): ``-x,`` prints
one CSV line per event on stderr after the command, fields value, unit, event, run time,
percentage, ...). perf enables its counters at the command's exec and sums its children, so the
counts describe the command, not perf. The trial's stderr is given back without those lines.

What perf cannot count is never a 0: ``<not supported>`` (no such counter here, e.g. hardware
events in a VM without a PMU) and ``<not counted>`` leave that measure missing with the reason.
The trial's other measures stay, and it succeeds with the reason noted, unless a metric needs
the missing counter: then it fails and says which metric needs it. The
launcher's rusage in such a trial is perf's and the command's together, so wall_time becomes
perf's ``duration_time`` of the command, and the other rusage built-ins are not taken (the
checker refuses them next to counters; task_clock and page_faults count the command's).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import attrs

from benchlang.backends.base import Execution
from benchlang.backends.local import argv_for
from benchlang.model import COUNTERS, Experiment, Measure

DURATION = "duration_time"
RUSAGE_UNDER_PERF = ("user_time", "sys_time", "cpu_time", "max_rss", "minor_faults", "major_faults")
_SCALE = {"msec": 1.0, "ns": 1.0}  # task-clock in ms as perf prints it; duration_time in ns


def events_of(measures: Sequence[Measure]) -> list[str]:
    """perf's names of the events to count, in declared order, with duration_time last."""
    return list(dict.fromkeys([*(COUNTERS[m.builtin or ""][0] for m in measures), DURATION]))


def perf_command(text: str, measures: Sequence[Measure]) -> str:
    """The trial's command under ``perf stat`` (each word of the original kept literal)."""
    return f"perf stat -x, -e {','.join(events_of(measures))} -- {shlex.join(argv_for(text))}"


def probe_command(measures: Sequence[Measure]) -> str:
    """Asked once per host before its first trial: is perf there, and does it know the events?"""
    return f"perf stat -x, -e {','.join(events_of(measures))} -- true"


def parse_perf_csv(text: str, events: Sequence[str]) -> tuple[dict[str, float | str], str]:
    """(event -> count, or the ``<...>`` perf printed instead) and the text before perf's
    lines: the trailing lines whose third field is one of ``events`` (a ``:u`` modifier, as
    perf adds for unprivileged users, is ignored)."""
    lines = text.splitlines(keepends=True)
    wanted = set(events)
    found: dict[str, float | str] = {}
    end = len(lines)
    while end and not lines[end - 1].strip():
        end -= 1
    cut = end
    for i in range(end - 1, -1, -1):
        fields = lines[i].rstrip("\n").split(",")
        name = fields[2].split(":")[0] if len(fields) >= 3 else None
        if name not in wanted or name in found:
            break
        value = fields[0].strip()
        if value.startswith("<"):
            found[name] = value
        else:
            try:
                found[name] = float(value) * _SCALE.get(fields[1].strip(), 1.0)
            except ValueError:
                break
        cut = i
    return found, "".join(lines[:cut])


def read_counters(
    execution: Execution, measures: Sequence[Measure]
) -> tuple[Execution, dict[str, float], dict[str, str]]:
    """The trial's execution with perf's lines taken off its stderr; its measures (the
    counters perf counted, and wall_time from duration_time); and each counter it could not
    count, by measure name, with the reason (:func:`counter_outcome` judges the trial)."""
    text = execution.stderr.decode(errors="replace")
    counts, rest = parse_perf_csv(text, events_of(measures))
    rusage = {k: float(v) for k, v in execution.rusage.items() if k not in RUSAGE_UNDER_PERF}
    duration = counts.get(DURATION)
    if isinstance(duration, float):
        rusage["wall_time"] = duration / 1e9
    cleaned = attrs.evolve(execution, stderr=rest.encode(), rusage=rusage)
    values = dict(rusage)
    missing: dict[str, str] = {}
    for m in measures:
        event = COUNTERS[m.builtin or ""][0]
        count = counts.get(event)
        if count is None:
            missing[m.name] = f"perf stat printed no count for {event}"
        elif isinstance(count, str):
            why = (
                " (this host has no such counter: hardware events need a CPU PMU, which many VMs lack)"
                if count == "<not supported>"
                else ""
            )
            missing[m.name] = f"perf stat reports {event} as {count}{why}"
        else:
            values[m.name] = count
    return cleaned, values, missing


def counter_outcome(
    missing: dict[str, str], experiment: Experiment
) -> tuple[str | None, str | None]:
    """(why the trial fails, why it succeeds with measures missing) for the counters perf
    could not count: it fails only when a metric is computed from one (its measure, or a
    derived metric's names), naming that metric; otherwise the note says what is missing and
    why, and the trial's other measures stand."""
    if not missing:
        return None, None
    for name, why in missing.items():
        users = [
            m.name
            for m in experiment.metrics
            if name in (m.expression.names() if m.expression else (m.measure,))
        ]
        if users:
            return f"{name}: {why}; metric {', '.join(users)} needs it", None
    shown = "; ".join(f"{name}: {why}" for name, why in missing.items())
    return None, f"not counted, stored as missing (no metric needs it): {shown}"
