"""perf stat counters as built-in measures (run/counters.py).

Software events run for real and are checked against an independent reading (the kernel's
rusage of the same command without perf). Hardware events go through the same parser fed with
perf's own output (``-x,``), captured from perf 6.1 on a VM without a PMU, where they read
``<not supported>``: the measure is missing with that reason, never a 0
(tests/test_counters_missing.py: what the trial then does).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess

import pytest

from benchlang import model
from benchlang.backends.base import Execution
from benchlang.lang.check import compile_source
from benchlang.lang.diagnostics import SpecError
from benchlang.lang.syntax import decode
from benchlang.run.counters import parse_perf_csv, perf_command, read_counters


def _perf_problem() -> str | None:
    if shutil.which("perf") is None:
        return "perf is not installed (Debian: linux-perf; .ci/run installs it)"
    done = subprocess.run(
        ["perf", "stat", "-x,", "-e", "page-faults", "--", "true"], capture_output=True, timeout=60
    )
    if done.returncode != 0:
        last = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        return f"perf stat cannot count here: {' '.join(last)}"
    return None


PERF_PROBLEM = _perf_problem()
needs_perf = pytest.mark.skipif(PERF_PROBLEM is not None, reason=PERF_PROBLEM or "")

# perf 6.1's own stderr for `perf stat -x, -e instructions,cycles,...,duration_time -- cmd`
# on this VM (no PMU), after the command's own stderr line.
PERF_OUTPUT = """compressing...
<not supported>,,instructions,0,100.00,,
<not supported>,,cycles,0,100.00,,
162,,page-faults,1746104,100.00,92.778,K/sec
1,,context-switches,1746104,100.00,572.704,/sec
0,,cpu-migrations,1746104,100.00,0.000,/sec
1.75,msec,task-clock,1746104,100.00,1.313,CPUs utilized
<not counted>,,cache-misses,0,0.00,,
2046218706,ns,duration_time,2046218706,100.00,1.020,G/sec
"""
EVENTS = [
    "instructions",
    "cycles",
    "page-faults",
    "context-switches",
    "cpu-migrations",
    "task-clock",
    "cache-misses",
    "duration_time",
]


def measures(*builtins: str) -> list[model.Measure]:
    return [model.Measure(b, builtin=b) for b in builtins]


def perf_said(*events: str) -> str:
    """PERF_OUTPUT as perf prints it when asked for ``events`` (and duration_time) only."""
    keep = {*events, "duration_time"}
    lines = PERF_OUTPUT.splitlines(keepends=True)
    return lines[0] + "".join(x for x in lines[1:] if x.split(",")[2] in keep)


def execution(stderr: str) -> Execution:
    return Execution(
        0, False, 0.0, 3.0, 3.0, b"", stderr.encode(), {"wall_time": 3.0, "max_rss": 9e4}
    )


def test_parse_perf_csv_reads_counts_and_what_perf_could_not_count():
    counts, rest = parse_perf_csv(PERF_OUTPUT, EVENTS)
    assert rest == "compressing...\n"
    assert counts["instructions"] == "<not supported>"
    assert counts["cache-misses"] == "<not counted>"
    assert counts["page-faults"] == 162.0 and counts["cpu-migrations"] == 0.0
    assert counts["task-clock"] == 1.75
    assert counts["duration_time"] == 2046218706.0


def test_a_modifier_and_a_lookalike_line_of_the_command():
    text = "1,,page-faults,0,0,,\n17,,page-faults:u,100,100.00,,\n5,,duration_time:u,1,1,,\n"
    counts, rest = parse_perf_csv(text, ["page-faults", "duration_time"])
    assert counts == {"page-faults": 17.0, "duration_time": 5.0}
    assert rest == "1,,page-faults,0,0,,\n", "the command's own line stays its stderr"


def test_an_unsupported_event_leaves_the_measure_missing_with_the_reason_never_zero():
    cleaned, values, missing = read_counters(
        execution(perf_said("page-faults", "instructions")), measures("page_faults", "instructions")
    )
    assert missing["instructions"].startswith("perf stat reports instructions as <not supported>")
    assert "PMU" in missing["instructions"]
    assert "instructions" not in values and values["page_faults"] == 162.0
    assert cleaned.stderr == b"compressing...\n"
    _, _, missing = read_counters(execution(perf_said("cache-misses")), measures("cache_misses"))
    assert missing == {"cache_misses": "perf stat reports cache-misses as <not counted>"}
    _, _, missing = read_counters(execution("no perf here\n"), measures("page_faults"))
    assert missing == {"page_faults": "perf stat printed no count for page-faults"}


def test_under_perf_wall_time_is_the_commands_and_rusage_of_perf_is_dropped():
    cleaned, values, missing = read_counters(
        execution(perf_said("page-faults", "task-clock")), measures("page_faults", "task_clock")
    )
    assert missing == {}
    assert values == {"wall_time": 2.046218706, "page_faults": 162.0, "task_clock": 1.75}
    assert cleaned.rusage == {"wall_time": 2.046218706}, "max_rss would be perf's"


def test_the_wrapped_command_keeps_each_word_literal():
    text = perf_command("printf '%s\\n' \"a b\" $HOME", measures("page_faults"))
    assert text.startswith("perf stat -x, -e page-faults,duration_time -- /bin/sh -c ")
    assert text.endswith(" -- /bin/sh -c 'printf '\"'\"'%s\\n'\"'\"' \"a b\" $HOME'")


SPEC = """benchlang 1
experiment c {{
  benchmark k {{ run "true" {measures} }}
}}
"""


def test_rusage_beside_counters_is_refused_with_its_position():
    with pytest.raises(SpecError) as info:
        compile_source(
            decode(
                "c.bench",
                SPEC.format(measures="measure pf = page_faults measure r = max_rss").encode(),
            )
        )
    (d,) = info.value.diagnostics
    assert d.message.startswith("measure r = max_rss cannot be taken beside perf counters")
    assert (d.span.line, d.span.column) == (3, 61)


def test_an_unknown_counter_suggests_one():
    with pytest.raises(SpecError) as info:
        compile_source(decode("c.bench", SPEC.format(measures="measure m = cache_miss").encode()))
    assert info.value.diagnostics[0].hint == "did you mean 'cache_misses'?"


@needs_perf
def test_software_counters_for_real_agree_with_rusage(tmp_path, run_cli):
    """16 MiB touched by dd: page_faults (perf) against minor_faults (the launcher's rusage)
    of the same command without perf; context switches and task clock are counted."""
    spec = tmp_path / "c.bench"
    command = "dd if=/dev/zero of=/dev/null bs=16M count=1 status=none"
    spec.write_text(
        f"""benchlang 1
experiment c {{
  benchmark counted {{
    run "{command}; echo done >&2"
    measure pf = page_faults
    measure cs = context_switches
    measure tc = task_clock
    measure mig = cpu_migrations
    measure t = wall_time
  }}
  benchmark plain {{ run "{command}" measure f = minor_faults }}
  benchmark hardware {{ run "true" measure ins = instructions }}
  design {{ runs 3 }}
}}
"""
    )
    status, _out, err = run_cli(["run", spec, "--store", tmp_path / "c.sqlite", "-i"], cwd=tmp_path)
    assert status == 0, err
    db = sqlite3.connect(tmp_path / "c.sqlite")
    values = {}
    for label, name, value in db.execute(
        "SELECT t.label, m.name, m.value FROM measures m JOIN trials t USING (plan_hash, trial)"
    ):
        values.setdefault((label, name), []).append(value)
    pf, f = min(values["counted", "pf"]), min(values["plain", "f"])
    assert pf >= 4096, "16 MiB in 4 KiB pages"
    assert abs(pf - f) / f < 0.05, (pf, f)
    assert all(x >= 0 for x in values["counted", "cs"]) and min(values["counted", "tc"]) > 0
    assert all(0 < t < 30 for t in values["counted", "t"])
    stderr = {r[0] for r in db.execute("SELECT stderr_tail FROM trials WHERE label = 'counted'")}
    assert stderr == {b"done\n"}, "perf's lines are not the command's stderr"
    hardware = db.execute(
        "SELECT t.status, t.reason, m.value FROM trials t LEFT JOIN measures m "
        "ON m.plan_hash = t.plan_hash AND m.trial = t.trial AND m.name = 'ins' "
        "WHERE t.label = 'hardware'"
    ).fetchall()
    for status_, reason, ins in hardware:
        assert status_ == "ok", "no metric needs ins: the trial stands"
        if ins is not None:
            assert ins > 0, "a supported hardware counter counts something"
        else:
            assert "perf stat reports instructions as <not supported>" in reason, "never a 0"


def test_a_host_without_perf_is_refused_before_its_first_trial(tmp_path):
    """No perf on the host's PATH: the probe fails and the host runs no trial."""
    import sys

    spec = tmp_path / "c.bench"
    spec.write_text(SPEC.format(measures="measure pf = page_faults"))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchlang",
            "run",
            str(spec),
            "--store",
            str(tmp_path / "c.sqlite"),
        ],
        capture_output=True,
        timeout=120,
        env={**os.environ, "PATH": str(tmp_path / "empty")},
    )
    said = done.stdout.decode() + done.stderr.decode()
    assert done.returncode != 0
    assert "perf stat (counters)" in said and "perf" in said, said
    assert "Traceback" not in said
    db = sqlite3.connect(tmp_path / "c.sqlite")
    assert db.execute("SELECT count(*) FROM trials").fetchone() == (0,)
