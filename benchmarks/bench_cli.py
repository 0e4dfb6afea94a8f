"""Start-up of the quick commands, side by side with the floor of any spec-parsing command.

``benchlang check specs/quickstart.bench`` against ``python3 -c "import lark, numpy"`` (a
command that parses a spec needs at least those two), plus ``--version`` and ``--help``;
target: check within 2x the floor. Timed with hyperfine (``-N``, warm-up, JSON export) when
installed, else by interleaved repetitions here. Also prints the modules each command loads.

    python benchmarks/bench_cli.py [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
TARGET = 2.0
CASES = {
    "floor: import lark, numpy": [PY, "-c", "import lark, numpy"],
    "benchlang --version": [PY, "-m", "benchlang", "--version"],
    "benchlang --help": [PY, "-m", "benchlang", "--help"],
    "benchlang check quickstart": [PY, "-m", "benchlang", "check", "specs/quickstart.bench"],
}
COUNT = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write(f'\\nMODULES {len(sys.modules)}\\n'))\n"
    "from benchlang.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def with_hyperfine(runs: int) -> dict[str, tuple[float, float]]:
    """Mean and standard deviation (s) of each case through hyperfine's JSON export."""
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "cli.json"
        command = ["hyperfine", "-N", "--warmup", "3", "--runs", str(runs), "--style", "none"]
        command += ["--export-json", str(export)]
        for name, argv in CASES.items():
            command += ["-n", name, shlex.join(argv)]
        subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        results = json.loads(export.read_text())["results"]
    return {r["command"]: (r["mean"], r["stddev"] or 0.0) for r in results}


def interleaved(runs: int) -> dict[str, tuple[float, float]]:
    """The same, timed here: one run of every case per round, so drift hits all alike."""
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs + 2):
        for name, argv in CASES.items():
            t0 = time.perf_counter()
            subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t0)
    return {n: (statistics.mean(t[2:]), statistics.stdev(t[2:])) for n, t in times.items()}


def modules_loaded(argv: list[str]) -> int | None:
    if argv[1] != "-m":
        return None
    done = subprocess.run(
        [PY, "-c", COUNT, *argv[3:]], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return int(done.stderr.strip().splitlines()[-1].split()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    timed = with_hyperfine(args.runs) if shutil.which("hyperfine") else interleaved(args.runs)
    floor = timed["floor: import lark, numpy"][0]
    print(f"{'command':32} {'mean':>9} {'sd':>8} {'x floor':>8} {'modules':>8}")
    for name, argv in CASES.items():
        mean, sd = timed[name]
        modules = modules_loaded(argv)
        shown = "" if modules is None else str(modules)
        print(f"{name:32} {mean * 1e3:7.1f}ms {sd * 1e3:6.1f}ms {mean / floor:7.2f}x {shown:>8}")
    ratio = timed["benchlang check quickstart"][0] / floor
    verdict = "meets" if ratio <= TARGET else "misses"
    print(f"check / floor = {ratio:.2f}x ({verdict} the {TARGET:g}x target)")
    return 0


if __name__ == "__main__":
    # As installed, a package's bytecode is cached: without it every command compiles
    # benchlang's sources again (0.2 s), which no user pays. The cache goes to a private
    # prefix so that the tree stays clean; the warm-up run writes it.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ.setdefault("PYTHONPYCACHEPREFIX", tempfile.mkdtemp(prefix="benchlang-pycache-"))
    raise SystemExit(main())
