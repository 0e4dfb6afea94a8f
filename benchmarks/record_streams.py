"""Record real sample streams for the stopping-rule evaluation (tests/data/streams/*.csv).

Runs each command N times in a row on this machine and writes one CSV per command with the
wall-clock time of every trial in seconds (column ``seconds``), in trial order. Usage:

    python benchmarks/record_streams.py [--n 1000] [--out tests/data/streams]
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "cpu_python_loop": [sys.executable, "-c", "s = 0\nfor i in range(200_000):\n    s += i * i"],
    "sha256_file": ["sha256sum", "{data}"],
    "write_fsync": ["dd", "if={data_small}", "of={target}", "bs=64k", "conv=fsync", "status=none"],
}


def record(command: list[str], n: int) -> list[float]:
    times = []
    for _ in range(n):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent.parent / "tests/data/streams"
    )
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp, "data.bin")
        data.write_bytes(os.urandom(8 << 20))
        small = Path(tmp, "small.bin")
        small.write_bytes(os.urandom(256 << 10))
        fill = {"data": str(data), "data_small": str(small), "target": str(Path(tmp, "out.bin"))}
        for name, template in COMMANDS.items():
            command = [part.format(**fill) for part in template]
            times = record(command, args.n)
            with open(args.out / f"{name}.csv", "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(["seconds"])
                writer.writerows([f"{t:.9f}"] for t in times)
            print(
                f"{name}: {args.n} trials, median {sorted(times)[len(times) // 2] * 1e3:.3f} ms",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
