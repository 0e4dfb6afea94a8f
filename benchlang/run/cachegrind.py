"""Measures that move little: instructions and estimated cycles from valgrind's cachegrind
(comparable on shared runners; docs/measures.md, "Simulated counts").

A benchmark that declares ``sim_instructions`` or ``sim_cycles`` (model.SIMULATED) runs its
trials under ``valgrind --tool=cachegrind --trace-children=yes --cache-sim=yes`` with the cache
geometry pinned (``GEOMETRY``: without ``--I1/--D1/--LL`` cachegrind takes the host's caches,
and the cycles estimate would change with the CI machine's CPU model). Every process of the
trial writes its own file (``--cachegrind-out-file=DIR/cg.%p``); a small ``awk`` on the host
sums their ``summary:`` lines per event and prints the totals, the geometry cachegrind reports
(its ``desc:`` lines) and the number of processes on stderr after the command's own, marked
``MARK``, as perf stat's lines are (run/counters.py). ``BENCHLANG_PAD`` keeps the size of the
environment the same on every trial (``_PAD``). Valgrind's own messages go to per-process
log files, so the command's stderr is given back as it was. Without ``--trace-children`` a
``sh -c`` command counts only the shell.

``sim_instructions`` is cachegrind's ``I refs`` (``Ir``). ``sim_cycles`` is iai's estimate
(bheisler/iai, src/lib.rs, ``CachegrindSummary::cycles``, which credits Itamar
Turner-Trauring, "Consistent benchmarking in CI", pythonspeed.com):
L1 hits + 5 x LL hits + 35 x RAM hits, where RAM hits = ILmr + DLmr + DLmw (last-level misses),
LL hits = I1mr + D1mr + D1mw - RAM hits, and L1 hits = Ir + Dr + Dw - LL hits - RAM hits.

Under valgrind the command runs about 20x slower: its wall_time is valgrind's, not comparable
with a run outside it, and the launcher's rusage is valgrind's, so the other rusage built-ins
are not taken; each trial's note says so and records the geometry simulated.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

import attrs

from benchlang.backends.base import Execution
from benchlang.backends.local import argv_for
from benchlang.model import Measure
from benchlang.run.counters import RUSAGE_UNDER_PERF

MARK = "benchlang-cachegrind"
GEOMETRY = (("I1", "32768,8,64"), ("D1", "32768,8,64"), ("LL", "8388608,16,64"))
"""Simulated caches (size in bytes, associativity, line size): 32 KiB 8-way L1s and an 8 MiB
16-way last level, a common x86-64 server's; fixed so that counts do not follow the host."""
RUSAGE_UNDER_VALGRIND = RUSAGE_UNDER_PERF
"""The launcher's rusage is valgrind's (as it is perf's under perf stat): not taken."""
EVENTS = ("Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw")
MISSING_HINT = (
    "valgrind is not installed: sim_instructions and sim_cycles run the command under "
    "cachegrind (Debian/Ubuntu: apt-get install valgrind)"
)

_SUM = (
    "awk -v m=" + MARK + " '"
    '/^desc:/ && !seen[$0]++ {sub(/^desc: */, ""); print m, "desc", $0} '
    '/^events:/ {n = split(substr($0, 8), ev, " ")} '
    "/^summary:/ {p++; for (i = 1; i <= n; i++) s[ev[i]] += $(i + 1)} "
    'END {for (e in s) printf "%s %s %.0f\\n", m, e, s[e]; print m, "processes", p + 0}'
    "'"
)

_PAD = (
    'BENCHLANG_PAD=$(printf "%*s" $((64 - ${#BENCHLANG_TRIAL} - ${#BENCHLANG_SEED})) ""); '
    "export BENCHLANG_PAD; "
)
"""The environment's size held constant across trials: the lengths of the trial's number and
seed vary from trial to trial, and with the environment's size the stack's layout (a variable
of 2 characters instead of 1 moved gzip's count by 14 instructions here); ``BENCHLANG_PAD``
(spaces) takes up the difference."""


def valgrind_options() -> str:
    """cachegrind's options but the output files: every process, pinned caches."""
    geometry = " ".join(f"--{level}={value}" for level, value in GEOMETRY)
    return f"--tool=cachegrind --trace-children=yes --cache-sim=yes {geometry}"


def cachegrind_command(text: str) -> str:
    """The trial's command under cachegrind (each word of the original kept literal, as
    run.counters does), with the per-process counts summed on stderr and the files removed."""
    return (
        f"{_PAD}d=$(mktemp -d) || exit 125; valgrind {valgrind_options()} "
        '--cachegrind-out-file="$d/cg.%p" --log-file="$d/log.%p" -q -- '
        f"{shlex.join(argv_for(text))}; s=$?; "
        f'{_SUM} "$d"/cg.* >&2 2>/dev/null; '
        f'ls "$d"/cg.* >/dev/null 2>&1 || sed "s/^/{MARK} log /" "$d"/log.* >&2 2>/dev/null; '
        'rm -rf "$d"; exit $s'
    )


def probe_command() -> str:
    """Asked once per host before its first trial: is valgrind there, with cachegrind?"""
    return (
        f"command -v valgrind >/dev/null 2>&1 || {{ echo {shlex.quote(MISSING_HINT)} >&2; "
        f"exit 127; }}; valgrind {valgrind_options()} --cachegrind-out-file=/dev/null -q -- true"
    )


@attrs.frozen
class Simulated:
    """What the marked lines of one trial say: event totals, geometry, processes, log."""

    totals: dict[str, float]
    geometry: tuple[str, ...]
    processes: int
    log: tuple[str, ...]

    def value(self, builtin: str) -> float | None:
        """``sim_instructions`` or ``sim_cycles`` (iai's formula), None without every event."""
        if not all(e in self.totals for e in EVENTS) or not self.processes:
            return None
        t = self.totals
        if builtin == "sim_instructions":
            return t["Ir"]
        ram = t["ILmr"] + t["DLmr"] + t["DLmw"]
        ll = t["I1mr"] + t["D1mr"] + t["D1mw"] - ram
        l1 = t["Ir"] + t["Dr"] + t["Dw"] - ll - ram
        return l1 + 5 * ll + 35 * ram


def parse_marked(text: str) -> tuple[Simulated, str]:
    """The marked lines of a trial's stderr read, and the stderr without them."""
    totals: dict[str, float] = {}
    geometry: list[str] = []
    log: list[str] = []
    processes = 0
    kept = []
    prefix = MARK + " "
    for line in text.splitlines(keepends=True):
        if not line.startswith(prefix):
            kept.append(line)
            continue
        key, _, rest = line[len(prefix) :].rstrip("\n").partition(" ")
        if key == "desc":
            geometry.append(" ".join(rest.split()))
        elif key == "log":
            log.append(rest)
        elif key == "processes":
            processes = int(rest)
        else:
            try:
                totals[key] = float(rest)
            except ValueError:
                kept.append(line)
    return Simulated(totals, tuple(geometry), processes, tuple(log)), "".join(kept)


def read_simulated(
    execution: Execution, measures: Sequence[Measure]
) -> tuple[Execution, dict[str, float], str | None, str]:
    """The trial's execution with the marked lines taken off its stderr and valgrind's rusage
    made unavailable; its measures (wall_time kept, flagged in the note); why the simulated
    measures could not be read (None when they were); and the note stored with the trial
    (the geometry simulated, the processes counted, the caveat on wall_time)."""
    simulated, rest = parse_marked(execution.stderr.decode(errors="replace"))
    why = "it ran under valgrind (sim_instructions/sim_cycles), so the rusage is valgrind's"
    rusage = {k: v for k, v in execution.rusage.items() if k not in RUSAGE_UNDER_VALGRIND}
    unavailable = {
        **execution.unavailable,
        **{k: why for k in RUSAGE_UNDER_VALGRIND if k in execution.rusage},
    }
    cleaned = attrs.evolve(execution, stderr=rest.encode(), rusage=rusage, unavailable=unavailable)
    values = {k: float(v) for k, v in rusage.items()}
    failed = None
    for m in measures:
        assert m.builtin is not None  # a simulated measure (Benchmark.simulated)
        value = simulated.value(m.builtin)
        if value is None:
            said = "; ".join(simulated.log[-3:]) or "no cachegrind output"
            failed = f"{m.name}: cachegrind counted nothing ({said})"
            break
        values[m.name] = value
    note = (
        f"under cachegrind ({simulated.processes} process{'es' * (simulated.processes != 1)}; "
        f"{'; '.join(simulated.geometry) or 'geometry not reported'}): "
        "wall_time is valgrind's (about 20x slower), not comparable with runs outside it"
    )
    return cleaned, values, failed, note
