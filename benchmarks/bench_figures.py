"""The papers' figures at 100,000 trials (issue 36): what they add to `benchlang report`, and
the time to export one with `benchlang figure` (targets: at most 2 s more than the report
without them; an export under 1 s).

The store is bench_store_scale's (a 10-configuration spec, 100 series, a KPI and a variability
score: series-kpis, variability, cdf and cdf-overlay apply). In one process, after the inputs
are gathered once (what the report computes whether or not it draws figures): the whole page,
and its figures section alone, ``--repeat`` times each. Then each applicable figure exported
as PDF by the command line (a new process: start-up, the store read and analysed, the drawing),
and, in process, the drawing alone. Medians; the machine is shared and noisy.

    python benchmarks/bench_figures.py [--trials 100000] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store_scale import store_in, timed


def median_seconds(call, repeat: int) -> tuple[float, float]:
    """Median wall and CPU seconds of ``call`` (CPU is steadier on a loaded machine)."""
    wall, cpu = [], []
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        call()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", help="directory to keep the store in")
    args = parser.parse_args()
    root, store = store_in(args.keep, args.trials, "benchlang-figures-")
    from benchlang.app.report import report_inputs
    from benchlang.report.figures import applicable, labels
    from benchlang.report.figures.render import Palette, draw
    from benchlang.report.html import render_report
    from benchlang.report.html.paper_figures import figures_section

    load = os.getloadavg()[0]
    inputs = report_inputs(store)
    page = median_seconds(lambda: render_report(inputs), args.repeat)
    section = median_seconds(lambda: figures_section(inputs), args.repeat)
    built = [(kind, data) for kind, data, _why in applicable(inputs) if data is not None]
    palette = Palette(labels(inputs))
    print(f"{args.trials:,} trials, load average {load:.1f}; medians of {args.repeat}")
    print(f"{'what':44} {'seconds':>8} {'CPU s':>6}")
    print(f"{'report page (inputs gathered)':44} {page[0]:8.2f} {page[1]:6.2f}")
    verdict = "ok" if section[1] <= 2.0 else "misses 2 s"
    print(
        f"{'  of which the figures section':44} {section[0]:8.2f} {section[1]:6.2f}  "
        f"{verdict} (CPU; {len(built)} figures)"
    )
    benchlang = [sys.executable, "-m", "benchlang"]
    for kind, data in built:
        out = root / f"{kind.name}.pdf"
        wall = statistics.median(
            timed([*benchlang, "figure", str(store), kind.name, "-o", str(out)], "wrote")[0]
            for _ in range(args.repeat)
        )
        drawing = median_seconds(lambda k=kind, d=data: draw(d, k.draw, palette, "pdf"), 3)
        print(f"{'figure ' + kind.name + ' -o .pdf (command)':44} {wall:8.2f}")
        print(f"{'  of which drawing it':44} {drawing[0]:8.2f} {drawing[1]:6.2f}")
    if not args.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
