"""Building the HTML report of a 100,000-trial store, side by side with `benchlang analyze` of
the same store (the baseline: the same analysis, printed as text, no plots). Target (issue 18):
a few seconds; plots downsample (and say so) instead of drawing every trial.

The store is the one benchmarks/bench_store_scale.py makes (the plan of a 10-configuration spec,
100 series, seeded log-normal values inserted in the store's schema), with its values stored
under the measure the spec's metric reads (`time`).

    python benchmarks/bench_report.py [--trials 100000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_store_scale import store_in, timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--keep", help="directory to keep the store and report in")
    args = parser.parse_args()
    root, store = store_in(args.keep, args.trials, "benchlang-report-")
    page = root / "report.html"
    benchlang = [sys.executable, "-m", "benchlang"]
    cases = {
        "baseline: benchlang analyze": [*benchlang, "analyze", "--store", str(store)],
        "benchlang report": [*benchlang, "report", str(store), "-o", str(page)],
    }
    print(f"{'command':30} {'seconds':>8} {'peak MiB':>9} {'x analyze':>9}")
    base = None
    for name, argv in cases.items():
        seconds, kib = timed(argv, "p50 upper" if "analyze" in name else None)
        base = base or seconds
        print(f"{name:30} {seconds:8.2f} {kib / 1024:9.0f} {seconds / base:9.2f}")
    size = page.stat().st_size
    print(f"report: {size / 1024:.0f} KiB, {page.read_text().count('<figure')} plots ({page})")
    if not args.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
