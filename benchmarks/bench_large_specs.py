"""``benchlang fmt`` and ``benchlang check`` on generated large specs (issue 49, item 3): seconds
and peak RSS of each command, one process each, on specs of 100 KB, 500 KB, 1 MB and 8 MB
(benchmarks of three lines each, a comment per benchmark). Specs above the bound
(benchlang.lang.syntax.MAX_BYTES) are refused at once with a positioned error.

    python benchmarks/bench_large_specs.py              # this tree
    python benchmarks/bench_large_specs.py --tree DIR   # another checkout (before/after)
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SIZES = {
    "100 KB": 100_000,
    "250 KB": 250_000,
    "500 KB": 500_000,
    "1 MB": 1_000_000,
    "8 MB": 8_000_000,
}
"""250 KB: checked and formatted within 10 s together (once a unit test's bound)."""


def spec(size: int) -> str:
    """A valid spec of about ``size`` bytes: one factor, many benchmarks."""
    parts = [
        'benchlang 1\n\n# generated\nexperiment big {\n  title "large"\n  seed 1\n'
        '  factor tool in ["a", "b", "c"]\n'
    ]
    total, n = len(parts[0]), 0
    while total < size:
        block = (
            f'  benchmark b{n} {{\n    run "echo {n} {{tool}}"  # trial {n}\n'
            "    measure time = wall_time\n  }\n"
        )
        parts.append(block)
        total += len(block)
        n += 1
    parts.append('  metric time { measure mean unit "s" better lower }\n  design { runs 5 }\n}\n')
    return "".join(parts)


def timed(argv: list[str], env: dict[str, str], tree: Path) -> tuple[float, float, int]:
    """Seconds, peak RSS in MB and exit status of one command, run in ``tree`` (``-m`` puts
    the working directory first on the path)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        argv, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - started, usage.ru_maxrss / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="the checkout whose benchlang to time")
    parser.add_argument("--sizes", nargs="*", default=list(SIZES), choices=list(SIZES))
    args = parser.parse_args()
    env = dict(os.environ)
    tree = (args.tree or Path(__file__).resolve().parents[1]).resolve()
    env["PYTHONPATH"] = str(tree)
    workdir = Path(tempfile.mkdtemp(prefix="bench-large-"))
    print(f"{'spec':>8} {'command':>8} {'seconds':>8} {'peak MB':>8} {'exit':>5}")
    try:
        for name in args.sizes:
            path = workdir / f"{name.replace(' ', '')}.bench"
            path.write_text(spec(SIZES[name]))
            for command in (["fmt", "--check"], ["check"]):
                argv = [sys.executable, "-m", "benchlang", *command, str(path)]
                seconds, peak, code = timed(argv, env, tree)
                print(f"{name:>8} {command[0]:>8} {seconds:8.2f} {peak:8.0f} {code:>5}")
    finally:
        shutil.rmtree(workdir)


if __name__ == "__main__":
    main()
