"""The stored wall_time against two independent tools: `hyperfine -N` and GNU time
(`/usr/bin/time -f %e`), on commands of known duration, on the machine as found and with both
cores kept busy by two `yes > /dev/null`.

For each command, each round runs it N times through `benchlang run` (one configuration,
order fixed; the stored wall_time is the launcher's fork to wait4, docs/measures.md), through
`hyperfine -N --runs N` (its per-run times from --export-json) and through GNU time (N runs,
each its own `/usr/bin/time -f %e -o FILE`), the three in a rotating order; ROUNDS rounds,
the values of all rounds pooled per tool. Printed: each tool's mean and median (ms), and
benchlang's over hyperfine's and over GNU time's. GNU time prints whole hundredths of a second
(`%e`, truncated): against it benchlang's values are truncated to hundredths the same way
(``gnu`` columns), so both sides carry the same rounding.

The commands run without a shell in all three tools (hyperfine -N; a script path rather than
a shell loop, so that benchlang, which runs a command with shell syntax through /bin/sh, execs
it directly too):

  - `true`: nothing but the start and the exit of a process;
  - `sleep 0.01` and `sleep 0.05`: 10 and 50 ms of sleeping, plus the start and exit;
  - BUSY: a /bin/sh loop of 20,000 iterations (~30 ms of CPU on this VM), the command whose
    time the load changes: with both cores busy it shares a core;
  - NAP (compiled with `cc` when there is one): 10 ms of nanosleep that times itself, so that
    what each tool holds around the command (its time less the command's own span) is seen
    apart from how long the command itself took under that tool: under load a command's own
    sleep and wake-up differ from one parent to another, and so do the three tools' times.

Target (issue 53 item 4): benchlang's stored wall_time within 1.1x of hyperfine's, mean and
median.

    python benchmarks/bench_wall_time.py
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench_runner import cores_busy  # the two `yes` loops, as bench_runner.py runs them

ROUNDS = 6
TARGET = 1.1
GNU_TIME = "/usr/bin/time"
BUSY = "#!/bin/sh\ni=0\nwhile [ $i -lt 20000 ]; do i=$((i+1)); done\n"
REPO = Path(__file__).resolve().parents[1]
MS = 1e3


NAP = r"""#include <stdio.h>
#include <time.h>
static long long ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}
int main(int argc, char **argv) {
    long long start = ns();
    struct timespec nap = {0, 10000000};
    nanosleep(&nap, 0);
    long long end = ns();
    FILE *log = fopen(argv[1], "a");
    fprintf(log, "%lld\n", end - start);
    return fclose(log) != 0;
}
"""
"""A command that times itself: 10 ms of nanosleep between two reads of CLOCK_MONOTONIC (the
clock the launcher, hyperfine and GNU time read), the span appended to the file named by its
argument after the second read. A tool's time of it, less its own span, is what the tool adds
around the command (spawn, exit, reaping, its own wake-up): never negative if nothing of the
command is left out."""


def commands(workdir: Path) -> list[tuple[str, str, int, Path | None]]:
    """(name, command, runs a round, the file the command logs its own span to)."""
    busy = workdir / "busy"
    busy.write_text(BUSY)
    busy.chmod(0o755)
    found = [
        ("true", "true", 100, None),
        ("sleep 0.01", "sleep 0.01", 35, None),
        ("sleep 0.05", "sleep 0.05", 10, None),
        ("busy loop", str(busy), 10, None),
    ]
    source, nap, log = workdir / "nap.c", workdir / "nap", workdir / "nap.log"
    source.write_text(NAP)
    for flags in (["-static"], []):
        built = subprocess.run(["cc", "-O2", *flags, "-o", str(nap), str(source)], check=False)
        if built.returncode == 0:
            found.append(("nap (own)", f"{nap} {log}", 35, log))
            break
    return found


def own_spans(log: Path, runs: int) -> list[float]:
    """The spans the last ``runs`` runs of the nap logged (s); the log emptied."""
    spans = [int(line) / 1e9 for line in log.read_text().split()]
    log.unlink()
    return spans[-runs:]


def benchlang_times(workdir: Path, command: str, runs: int) -> list[float]:
    """The stored wall_time of ``runs`` trials of ``command`` through `benchlang run` (s)."""
    spec = workdir / "wall.bench"
    spec.write_text(
        "benchlang 1\nexperiment wall {\n"
        f"  benchmark c {{ run {json.dumps(command)} }}\n"
        f"  design {{ runs {runs} order fixed }}\n}}\n"
    )
    store = workdir / "wall.sqlite"
    for leftover in workdir.glob("wall.sqlite*"):
        leftover.unlink()
    pythonpath = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")]))
    subprocess.run(
        [sys.executable, "-m", "benchlang", "run", str(spec), "--store", str(store), "--quiet"],
        cwd=workdir,
        check=True,
        stdout=subprocess.DEVNULL,
        env={**os.environ, "PYTHONPATH": pythonpath, "PYTHONSAFEPATH": "1"},
    )
    db = sqlite3.connect(store)
    values = [v for (v,) in db.execute("SELECT value FROM measures WHERE name = 'wall_time'")]
    db.close()
    assert len(values) == runs, (len(values), runs)
    return values


def hyperfine_times(workdir: Path, command: str, runs: int) -> list[float]:
    """hyperfine's per-run times of ``command`` without a shell (s)."""
    export = workdir / "hyperfine.json"
    subprocess.run(
        ["hyperfine", "-N", "--runs", str(runs), "--export-json", str(export), command],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return list(json.loads(export.read_text())["results"][0]["times"])


def gnu_times(workdir: Path, command: str, runs: int) -> list[float]:
    """GNU time's elapsed time (`%e`: whole hundredths of a second) of ``runs`` runs (s)."""
    out = workdir / "gnu-time.txt"
    values = []
    for _ in range(runs):
        subprocess.run(
            [GNU_TIME, "-f", "%e", "-o", str(out), *command.split()],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        values.append(float(out.read_text().split()[-1]))
    return values


def hundredths(values: list[float]) -> list[float]:
    """Values truncated to whole hundredths of a second, as GNU time's `%e` prints them."""
    return [math.floor(v * 100 + 1e-9) / 100 for v in values]


Tool = Callable[[Path, str, int], list[float]]
TOOLS: tuple[tuple[str, Tool], ...] = (
    ("benchlang", benchlang_times),
    ("hyperfine", hyperfine_times),
    ("gnu", gnu_times),
)


Pooled = dict[str, list[float]]


def measure(workdir: Path, label: str) -> list[tuple[str, Pooled]]:
    """Every command through the three tools, ROUNDS rounds in rotating order; each tool's
    values of all rounds pooled."""
    print(f"{label}: load average {os.getloadavg()[0]:.2f} at the start (2 cores)")
    rows = []
    for name, command, runs, log in commands(workdir):
        pooled: Pooled = {tool: [] for tool, _ in TOOLS}
        for r in range(ROUNDS):
            for k in range(len(TOOLS)):
                tool, run = TOOLS[(r + k) % len(TOOLS)]
                times = run(workdir, command, runs)
                pooled[tool] += times
                if log is not None:
                    spans = own_spans(log, len(times))
                    pooled.setdefault(f"{tool} own", []).extend(spans)
                    pooled.setdefault(f"{tool} around", []).extend(
                        t - span for t, span in zip(times, spans, strict=True)
                    )
        rows.append((name, pooled))
    return rows


def ratio(a: float, b: float) -> float:
    """a / b; nan when b is 0 (GNU time's `true`: under a hundredth of a second)."""
    return a / b if b > 0 else math.nan


def report(label: str, rows: list[tuple[str, Pooled]], load: float) -> None:
    print(f"\n{label} (load average {load:.2f} at the end): ms; ratios benchlang / the tool")
    print(
        f"{'command':<11} {'runs':>4}  {'benchlang':>15}  {'hyperfine':>15}  {'/hf mean':>8}"
        f"  {'/hf median':>10}  {'gnu time':>11}  {'bl at 10 ms':>11}  {'/gnu mean':>9}"
        f"  {'/gnu median':>11}"
    )
    print(f"{'':<11} {'':>4}  {'mean  median':>15}  {'mean  median':>15}")
    worst = 0.0
    for name, pooled in rows:
        pooled = {**pooled, "cut": hundredths(pooled["benchlang"])}
        pooled = {k: v for k, v in pooled.items() if " " not in k}
        mean = {k: statistics.fmean(v) for k, v in pooled.items()}
        median = {k: statistics.median(v) for k, v in pooled.items()}
        to_hf = ratio(mean["benchlang"], mean["hyperfine"])
        to_hf_median = ratio(median["benchlang"], median["hyperfine"])
        worst = max(worst, to_hf, to_hf_median)
        print(
            f"{name:<11} {len(pooled['benchlang']):>4}"
            f"  {mean['benchlang'] * MS:7.3f} {median['benchlang'] * MS:7.3f}"
            f"  {mean['hyperfine'] * MS:7.3f} {median['hyperfine'] * MS:7.3f}"
            f"  {to_hf:7.2f}x {to_hf_median:9.2f}x"
            f"  {mean['gnu'] * MS:5.1f} {median['gnu'] * MS:5.1f}"
            f"  {mean['cut'] * MS:5.1f} {median['cut'] * MS:5.1f}"
            f"  {ratio(mean['cut'], mean['gnu']):8.2f}x"
            f" {ratio(median['cut'], median['gnu']):10.2f}x"
        )
    verdict = "met" if worst <= TARGET else "MISSED"
    print(f"largest benchlang/hyperfine ratio: {worst:.2f}x (target <= {TARGET:g}x: {verdict})")
    for name, pooled in rows:
        if "benchlang own" not in pooled:
            continue
        print(
            f"{name}: the command's own span (its clock, from its start to its end) and what each"
            " tool's time holds around it (time - own span), ms: median, min"
        )
        for tool, _ in TOOLS:
            own, around = pooled[f"{tool} own"], pooled[f"{tool} around"]
            print(
                f"  {tool:<10} own span {statistics.median(own) * MS:7.3f}"
                f" (mean {statistics.fmean(own) * MS:7.3f});"
                + (
                    " around it: not comparable (GNU time's %e is whole hundredths, truncated)"
                    if tool == "gnu"
                    else f" around it {statistics.median(around) * MS:6.3f},"
                    f" min {min(around) * MS:6.3f}"
                )
            )


def main() -> None:
    for tool in ("hyperfine", GNU_TIME):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (Debian packages hyperfine, time)")
    with tempfile.TemporaryDirectory(prefix="bench-wall-") as tmp:
        workdir = Path(tmp)
        found = measure(workdir, "as found")
        results = [("as found", found, os.getloadavg()[0])]
        with cores_busy():
            busy = measure(workdir, "both cores busy (2 x yes)")
            results.append(("both cores busy", busy, os.getloadavg()[0]))
    for label, rows, load in results:
        report(label, rows, load)


if __name__ == "__main__":
    main()
