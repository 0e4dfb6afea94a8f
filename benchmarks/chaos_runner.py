"""Chaos for the local runner ("A runner that never lies"): each failure of the issue,
reproduced on real processes, with what benchlang stores now and whether it is right.

  1. orphan: a trial's background child outlives it and writes into the next trial's stdout;
     expect stored values 1,2,1,2,1,2 and no process left (ps, and the trial cgroup's procs);
  2. setsid: a child that calls setsid under a timeout; expect it killed;
  3. max_rss of gzip, bzip2, xz vs GNU time (/usr/bin/time -f %M) on the same input;
     expect a ratio within 5% (or 512 KiB);
  4. 200 MB of trial output: benchlang's own peak memory (GNU time on `benchlang run`), and a
     value printed before the kept tail;
  5. the runner's per-trial overhead and stored wall_time on `true` vs hyperfine -N
     (benchmarks/bench_runner.py, fewer rounds).

    python benchmarks/chaos_runner.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

from benchlang.backends.base import Command
from benchlang.backends.local import LocalSession

GNU_TIME = "/usr/bin/time"
ORPHAN = """benchlang 1
experiment orphan {
  factor x in [1, 2]
  benchmark b {
    run "(sleep 1.5; echo v=999) & echo v={x}; sleep 1"
    measure v from stdout regex "v=([0-9]+)"
  }
  design { runs 3 order fixed }
}
"""
BIG_OUTPUT = """benchlang 1
experiment big {{
  benchmark b {{
    run "{command}"
    measure v from stdout regex "v=([0-9]+)"
  }}
  design {{ runs 1 }}
}}
"""
verdicts: list[tuple[str, bool]] = []
baseline_peak: int | None = None  # benchlang's peak RSS on the orphan spec (tiny output), KiB


def verdict(name: str, ok: bool, detail: str) -> None:
    verdicts.append((name, ok))
    print(f"  [{'ok' if ok else 'WRONG'}] {detail}")


def live(marker: str) -> list[str]:
    """`ps` lines (zombies excluded) whose command holds ``marker``."""
    ps = subprocess.run(
        ["ps", "-eo", "pid,stat,args"], capture_output=True, text=True, check=True
    ).stdout
    return [
        line.strip()
        for line in ps.splitlines()[1:]
        if marker in line and "ps -eo" not in line and line.split()[1][0] != "Z"
    ]


def benchlang_run(workdir: Path, spec: str, name: str) -> tuple[int, str, int | None]:
    """`benchlang run` under GNU time: (status, stderr, benchlang's peak RSS in KiB)."""
    (workdir / f"{name}.bench").write_text(spec)
    argv = [sys.executable, "-m", "benchlang", "run", f"{name}.bench", "--store", f"{name}.sqlite"]
    argv += ["--quiet"]
    timed = shutil.which(GNU_TIME) is not None
    if timed:
        argv = [GNU_TIME, "-f", "peak %M", "-o", f"{name}.time", *argv]
    done = subprocess.run(argv, cwd=workdir, capture_output=True, text=True, check=False)
    peak = None
    if timed and (workdir / f"{name}.time").exists():
        peak = int((workdir / f"{name}.time").read_text().split()[-1])
    return done.returncode, done.stderr, peak


def orphan(workdir: Path) -> None:
    print("1. orphan: a background child outlives its trial (issue: 1,999,999,999,999,999)")
    global baseline_peak
    status, _err, baseline_peak = benchlang_run(workdir, ORPHAN, "orphan")
    db = sqlite3.connect(workdir / "orphan.sqlite")
    values = [
        int(v) for (v,) in db.execute("SELECT value FROM measures WHERE name = 'v' ORDER BY trial")
    ]
    (facts_json,) = db.execute("SELECT facts FROM hosts").fetchone()
    facts = json.loads(facts_json)
    db.close()
    print(f"  benchlang run exit {status}; isolation {facts.get('isolation', '?')}")
    verdict("orphan values", values == [1, 2, 1, 2, 1, 2], f"stored v = {values}")
    left = live("sleep 1.5")
    verdict("orphan left", not left, f"left running after benchlang exited: {left or 'nothing'}")
    leftover_cgroups = [
        str(p)
        for p in Path("/sys/fs/cgroup").glob("**/benchlang-*")
        if (p / "cgroup.procs").exists()
        and (p / "cgroup.procs").read_text().strip()
        and not Path(f"/proc/{p.name.split('-')[-2]}").exists()  # its benchlang is gone
    ]
    verdict(
        "cgroups", not leftover_cgroups, f"non-empty trial cgroups: {leftover_cgroups or 'none'}"
    )


def setsid_escape(workdir: Path) -> None:
    print("2. setsid: a child in a new session under a 0.5 s timeout")
    session = LocalSession("local", workdir)
    try:
        run = session.run_blocking(
            Command("setsid sh -c 'sleep 97.531' & sleep 97.532", timeout=0.5)
        )
        facts = asyncio.run(session.facts())
    finally:
        asyncio.run(session.close())
    print(f"  timed_out={run.timed_out} exit={run.exit_status} isolation={facts['isolation']}")
    left = live("97.53")
    verdict("setsid", run.timed_out and not left, f"left running: {left or 'nothing'}")


def max_rss(workdir: Path) -> None:
    print("3. max_rss vs GNU time (/usr/bin/time -f %M), same 4 MiB input")
    if shutil.which(GNU_TIME) is None:
        print("  GNU time is not installed (Debian package time): skipped")
        return
    rng = random.Random(7)
    words = [bytes(rng.randrange(97, 123) for _ in range(rng.randrange(2, 9))) for _ in range(500)]
    data = workdir / "input"
    data.write_bytes(b" ".join(rng.choice(words) for _ in range(800_000)))
    session = LocalSession("local", workdir)
    try:
        for tool in ("gzip", "bzip2", "xz"):
            if shutil.which(tool) is None:
                print(f"  {tool}: not installed")
                continue
            ours = session.run_blocking(Command(f"{tool} -c {data}")).rusage.get("max_rss")
            done = subprocess.run(
                [GNU_TIME, "-f", "%M", tool, "-c", str(data)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=True,
            )
            theirs = int(done.stderr.split()[-1])
            if ours is None:
                verdict(tool, False, f"{tool}: max_rss unavailable, GNU time {theirs} KiB")
                continue
            ok = abs(ours - theirs) <= max(0.05 * theirs, 512)
            verdict(
                tool,
                ok,
                f"{tool:6} benchlang {ours:8.0f} KiB  GNU time {theirs:8d} KiB  ratio {ours / theirs:.3f}",
            )
    finally:
        asyncio.run(session.close())


def big_output(workdir: Path) -> None:
    print("4. 200 MB of trial output (issue: 358 MB of benchlang memory)")
    flood = "yes aaaaaaaaaaaaaaa | head -c 200000000"
    for name, command, where in (
        ("tail", f"{flood}; echo; echo v=7", "after"),
        ("head", f"echo v=7; {flood}", "before"),
    ):
        _status, _err, peak = benchlang_run(
            workdir, BIG_OUTPUT.format(command=command), f"big_{name}"
        )
        db = sqlite3.connect(workdir / f"big_{name}.sqlite")
        row = db.execute("SELECT status, reason FROM trials").fetchone()
        value = db.execute("SELECT value FROM measures WHERE name = 'v'").fetchone()
        db.close()
        peak_text = f"{peak / 1024:.0f} MiB" if peak else "?"
        print(
            f"  value printed {where} 200 MB: benchlang peak {peak_text}; trial {row[0]}"
            + (f", v = {value[0]:g}" if value else "")
            + (f"; {row[1]}" if row[1] else "")
        )
        if name == "tail" and peak is not None and baseline_peak is not None:
            extra = (peak - baseline_peak) / 1024
            verdict("memory", extra < 32, f"{extra:.0f} MiB above the same run with no output")
        else:
            said = value is not None or (row[1] is not None and "cut" in row[1])
            verdict(
                "cut output",
                said,
                "the value is read from the whole output, or the failure says the output was cut",
            )


def runner_ratios(quick: bool) -> None:
    print("5. per-trial overhead and stored wall_time of `true` vs hyperfine -N")
    if shutil.which("hyperfine") is None:
        print("  hyperfine is not installed: skipped")
        return
    sys.path.insert(0, str(Path(__file__).parent))
    import bench_runner

    if quick:
        bench_runner.ROUNDS = 1
    bench_runner.main()


def main() -> None:
    quick = "--quick" in sys.argv
    with tempfile.TemporaryDirectory(prefix="chaos-runner-") as tmp:
        workdir = Path(tmp)
        orphan(workdir)
        setsid_escape(workdir)
        max_rss(workdir)
        big_output(workdir)
    runner_ratios(quick)
    wrong = [name for name, ok in verdicts if not ok]
    print()
    print("all fixed" if not wrong else f"still wrong: {', '.join(wrong)}")
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
