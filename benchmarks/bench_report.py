"""Building the HTML report of a 100,000-trial store, side by side with `benchlang analyze` of
the same store (the baseline: the same analysis and headline, printed as text, no plots).
Target (issue 18): a few seconds (here: at most 4 s), the page adding at most 1 s to
`analyze` (its order views and drawing; a ratio stopped being the measure once `analyze`
itself became 2.4-3x faster); plots downsample (and say so) instead of drawing every trial.
The page is built with ``--no-figures``: the papers' figures (matplotlib) have their own
benchmark, bench_figures.py, against this page as its baseline.

The store is the one benchmarks/bench_store_scale.py makes (the plan of a 10-configuration spec,
100 series, seeded log-normal values inserted in the store's schema), with its values stored
under the measure the spec's metric reads (`time`). The two commands run interleaved,
``--repeat`` times each; the table holds the medians (the machine is shared and noisy).

    python benchmarks/bench_report.py [--trials 100000] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store_scale import store_in, timed


def cpu_of_children() -> float:
    """User + system seconds of every waited-for child so far (GNU time's child included):
    steadier than wall time on a loaded machine."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", help="directory to keep the store and report in")
    args = parser.parse_args()
    root, store = store_in(args.keep, args.trials, "benchlang-report-")
    page = root / "report.html"
    benchlang = [sys.executable, "-m", "benchlang"]
    cases = {
        "baseline: benchlang analyze": (
            [*benchlang, "analyze", "--store", str(store)],
            "p50 upper",
        ),
        "benchlang report": (
            [*benchlang, "report", str(store), "-o", str(page), "--no-figures"],
            None,
        ),
    }
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in cases}
    load = os.getloadavg()[0]
    for _ in range(args.repeat):
        for name, (argv, expect) in cases.items():
            before = cpu_of_children()
            seconds, kib = timed(argv, expect)
            runs[name].append((seconds, cpu_of_children() - before, kib))
    print(f"{'command':30} {'seconds':>8} {'CPU s':>6} {'peak MiB':>9} {'x analyze':>9}")
    base = statistics.median(s for s, _, _ in runs["baseline: benchlang analyze"])
    for name, measured in runs.items():
        seconds, cpu, kib = (statistics.median(m[i] for m in measured) for i in range(3))
        verdict = ""
        if name == "benchlang report":
            ok = seconds <= 4 and seconds - base <= 1.0
            verdict = "  ok" if ok else "  misses 4 s / analyze + 1 s"
        print(
            f"{name:30} {seconds:8.2f} {cpu:6.2f} {kib / 1024:9.0f} {seconds / base:9.2f}{verdict}"
        )
    text = page.read_text(encoding="utf-8")
    print(
        f"report: {page.stat().st_size / 1024:.0f} KiB, {text.count('<figure')} plots; "
        f"median of {args.repeat} interleaved runs, load average {load:.1f} at the start"
    )
    if not args.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
