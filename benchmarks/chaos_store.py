"""Chaos for the runner and its store: each failure of the issue "A runner that never lies",
reproduced against a real ``benchlang`` subprocess, with what must hold now.

  1. SIGINT / SIGTERM during a trial: exit 130 / 143 within 1 s, ``ps`` shows nothing left of
     the trial's process group, the finished trials are committed, and the printed resume
     command (with --seed) completes the same plan; a second Ctrl-C while stopping.
  2. Two ``run`` on one store: the second is refused, naming the first (pid, host, since).
  3. ``--resume`` on a missing, empty, foreign or other-plan store: refused, store unchanged.
  4. A full disk (a 1 MiB tmpfs; root only) and a read-only store: one line, exit 1, the store
     intact, ``--resume`` completes the plan once space is back.
  5. ``results`` on an unrelated SQLite file: refused, the file byte-identical, no tables, no WAL.
     A store on read-only media reads.
  6. New stores (and their -wal/-shm/lock files) are 0600.
  7. Failed trials: exit 1, 0 with -i; a trial's escape sequences never reach the terminal.

    python benchmarks/chaos_store.py          # prints one line per check, exit 1 if any fails
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "160"}
BENCHLANG = [sys.executable, "-m", "benchlang"]

GATED = """benchlang 1
experiment chaos {{
  seed 4
  {hosts}
  factor k in [1, 2]
  benchmark b {{
    run "{fill}echo $BENCHLANG_TRIAL >> ran.txt; if [ $BENCHLANG_TRIAL -ge 3 ] && [ ! -e go ]; then sleep 300 & echo $! > blocked-$BENCHLANG_TRIAL.pid; wait; fi; echo v={{k}}"
    measure v from stdout regex "v=([0-9]+)"
  }}
  design {{ runs 4 order fixed }}
}}
"""

results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}" + (f"  ({detail})" if detail else ""), flush=True)


def cli(args: list, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*BENCHLANG, *map(str, args)],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def spec(where: Path, hosts: str = "", fill: str = "") -> None:
    (where / "g.bench").write_text(GATED.format(hosts=hosts, fill=fill))


def wait_for(condition: Callable[[], bool], within: float = 60) -> bool:
    deadline = time.monotonic() + within
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def blocked(where: Path) -> list[int]:
    return [int(p.read_text()) for p in where.glob("blocked-*.pid") if p.read_text().strip()]


def ps_left(groups: set[int]) -> list[str]:
    """``ps`` lines of live processes in ``groups`` or running the blocked command."""
    out = subprocess.run(["ps", "-eo", "pid,pgid,stat,args"], capture_output=True, text=True)
    lines = []
    for line in out.stdout.splitlines()[1:]:
        _pid, pgid, state, *args = line.split(None, 3)
        if state.startswith("Z"):
            continue
        if int(pgid) in groups or (args and "sleep 300" in args[0] and "ps -eo" not in args[0]):
            lines.append(line)
    return lines


def trials(store: Path) -> list[int]:
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return sorted(t for (t,) in db.execute("SELECT trial FROM trials"))
    finally:
        db.close()


def release(where: Path) -> None:
    (where / "go").touch()
    for pid in blocked(where):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def resume_argv(stderr: str) -> list[str] | None:
    for line in stderr.splitlines():
        if "continue with: " in line:
            words = shlex.split(line.split("continue with: ", 1)[1])
            return [*BENCHLANG, *words[1:]]
    return None


def signals(root: Path) -> None:
    cases = [
        ("SIGINT", signal.SIGINT, 130, "", 1),
        ("SIGTERM", signal.SIGTERM, 143, "", 1),
        ("SIGINT, 2 slots", signal.SIGINT, 130, "hosts local { slots 2 }", 1),
        ("SIGINT twice, 2 slots", signal.SIGINT, 130, "hosts local { slots 2 }", 2),
    ]
    for name, signum, status, hosts, times in cases:
        where = root / name.replace(" ", "_").replace(",", "")
        where.mkdir()
        spec(where, hosts)
        slots = 2 if hosts else 1
        proc = subprocess.Popen(
            [*BENCHLANG, "run", "g.bench", "--store", "g.sqlite", "--seed", "21", "-q"],
            cwd=where,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if not wait_for(lambda w=where, n=slots: len(blocked(w)) >= n):
            check(f"{name}: the trials started", False)
            proc.kill()
            continue
        time.sleep(0.2)
        pids = blocked(where)
        groups = {os.getpgid(p) for p in pids}
        t0 = time.monotonic()
        for _ in range(times):
            proc.send_signal(signum)
        _out, err = proc.communicate(timeout=30)
        elapsed = time.monotonic() - t0
        left = ps_left(groups)
        check(
            f"{name}: exit {status} within 1 s",
            proc.returncode == status and elapsed < 1.0,
            f"exit {proc.returncode} after {elapsed:.3f} s",
        )
        check(f"{name}: ps shows nothing left", not left, "; ".join(left) or "none left")
        done = trials(where / "g.sqlite")
        check(f"{name}: finished trials committed", set(range(3)) <= set(done), f"trials {done}")
        argv = resume_argv(err)
        check(
            f"{name}: resume command printed with --seed",
            argv is not None and "--seed" in argv,
            " ".join(argv[2:]) if argv else err.strip()[-200:],
        )
        release(where)
        if argv:
            resumed = subprocess.run(argv, cwd=where, env=ENV, capture_output=True, text=True)
            ran = [int(x) for x in (where / "ran.txt").read_text().split()]
            check(
                f"{name}: the resume command completes the same plan",
                resumed.returncode == 0
                and trials(where / "g.sqlite") == list(range(8))
                and all(ran.count(t) == 1 for t in range(3)),
                f"exit {resumed.returncode}, trials {trials(where / 'g.sqlite')}",
            )


def two_writers(root: Path) -> None:
    where = root / "two"
    where.mkdir()
    spec(where)
    first = subprocess.Popen(
        [*BENCHLANG, "run", "g.bench", "-q"],
        cwd=where,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for(lambda: len(blocked(where)) >= 1)
    second = cli(["run", "g.bench", "-q"], where)
    line = second.stderr.strip().splitlines()[0] if second.stderr.strip() else ""
    check(
        "two writers: the second is refused naming the first",
        second.returncode == 2 and f"pid {first.pid} on host" in line and " since " in line,
        line,
    )
    release(where)
    first.communicate(timeout=60)
    ran = [int(x) for x in (where / "ran.txt").read_text().split()]
    check(
        "two writers: every trial ran once",
        first.returncode == 0 and sorted(ran) == list(range(8)),
        f"exit {first.returncode}, ran {sorted(ran)}",
    )


def resume_refusals(root: Path) -> None:
    for case in ("missing", "empty", "foreign", "other plan"):
        where = root / f"resume_{case.replace(' ', '_')}"
        where.mkdir()
        spec(where)
        (where / "go").touch()
        store = where / "r.sqlite"
        if case == "empty":
            store.touch()
        elif case == "foreign":
            db = sqlite3.connect(store)
            db.execute("CREATE TABLE t (x)")
            db.commit()
            db.close()
        elif case == "other plan":
            cli(["run", "g.bench", "--store", store, "--seed", "99", "-q"], where)
        before = store.read_bytes() if store.exists() else None
        done = cli(["run", "g.bench", "--store", store, "--resume", "-q"], where)
        after = store.read_bytes() if store.exists() else None
        check(
            f"--resume, store {case}: refused, store unchanged",
            done.returncode == 2 and before == after and "Traceback" not in done.stderr,
            done.stderr.strip().splitlines()[0] if done.stderr.strip() else "",
        )


@contextlib.contextmanager
def tmpfs(where: Path, size: str):
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        yield None
        return
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def write_errors(root: Path) -> None:
    where = root / "full"
    where.mkdir()
    with tmpfs(root / "disk", "1m") as disk:
        if disk is None:
            check("disk full", True, "skipped: cannot mount a tmpfs (needs root)")
            return
        fill = f"if [ $BENCHLANG_TRIAL = 2 ] && [ ! -e {disk}/done ]; then cat /dev/zero > {disk}/fill 2>/dev/null; touch {disk}/done; fi; "
        spec(where, fill=fill)
        (where / "go").touch()
        store = disk / "s.sqlite"
        done = cli(["run", "g.bench", "--store", store], where)
        errors = [x for x in done.stderr.splitlines() if x.startswith("benchlang: error")]
        check(
            "disk full: one line, exit 1, no traceback",
            done.returncode == 1 and len(errors) == 1 and "Traceback" not in done.stderr,
            errors[0] if errors else done.stderr.strip()[-200:],
        )
        check("disk full: committed trials intact", trials(store) == [0, 1], f"{trials(store)}")
        (disk / "fill").unlink()
        resumed = cli(["run", "g.bench", "--store", store, "--resume", "-q"], where)
        db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
        db.close()
        check(
            "disk full: --resume completes the plan afterwards",
            resumed.returncode == 0 and trials(store) == list(range(8)) and integrity == "ok",
            f"exit {resumed.returncode}, integrity {integrity}",
        )
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        done = cli(["run", "g.bench", "--store", store, "--resume", "-q"], where)
        errors = [x for x in done.stderr.splitlines() if x.startswith("benchlang: error")]
        check(
            "read-only store: run is one line, exit 1",
            done.returncode == 1 and len(errors) == 1 and "read-only" in errors[0],
            errors[0] if errors else done.stderr.strip()[-200:],
        )
        shown = cli(["results", store], where)
        check(
            "read-only media: results reads the store",
            shown.returncode == 0 and "results: experiment chaos" in shown.stdout,
            f"exit {shown.returncode}",
        )


def readers(root: Path) -> None:
    where = root / "readers"
    where.mkdir()
    other = where / "app.db"
    db = sqlite3.connect(other)
    db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    db.execute("INSERT INTO users(name) VALUES ('ada')")
    db.commit()
    db.close()
    before = {p.name: p.read_bytes() for p in where.iterdir()}
    outcomes = [cli(["results", other], where), cli(["order", other], where)]
    after = {p.name: p.read_bytes() for p in where.iterdir()}
    check(
        "unrelated SQLite file: refused and byte-identical, nothing added",
        all(o.returncode == 2 and "is not a benchlang store" in o.stderr for o in outcomes)
        and before == after,
        outcomes[0].stderr.strip().splitlines()[0],
    )


def permissions(root: Path) -> None:
    where = root / "perm"
    where.mkdir()
    spec(where)
    (where / "go").touch()
    old = os.umask(0o022)
    try:
        proc = subprocess.Popen(
            [*BENCHLANG, "run", "g.bench", "--store", "p.sqlite", "-q"],
            cwd=where,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: (where / "p.sqlite-wal").exists(), within=30)
        modes = {
            p.name: oct(stat.S_IMODE(p.stat().st_mode))
            for p in where.glob("p.sqlite*")
            if p.exists()
        }
        proc.wait(timeout=60)
    finally:
        os.umask(old)
    check(
        "permissions: store, -wal, -shm and lock are 0600 (umask 022)",
        len(modes) >= 3 and set(modes.values()) == {"0o600"},
        ", ".join(f"{k} {v}" for k, v in sorted(modes.items())),
    )


def failures(root: Path) -> None:
    where = root / "fail"
    where.mkdir()
    (where / "f.bench").write_text(
        "benchlang 1\nexperiment f {\n"
        "  benchmark b { run \"printf 'x\\\\033]0;pwned\\\\007\\\\033[2Jgone\\\\n' >&2; exit 1\" }\n"
        "  design { runs 2 }\n}\n"
    )
    plain = cli(["run", "f.bench"], where)
    accepted = cli(["run", "f.bench", "--store", "i.sqlite", "-i"], where)
    check(
        "failed trials: exit 1, and 0 with -i",
        plain.returncode == 1 and accepted.returncode == 0,
        f"exit {plain.returncode} / {accepted.returncode}",
    )
    raw = plain.stdout + plain.stderr
    check(
        "a trial's escape sequences are shown escaped",
        "\x1b" not in raw and "\x07" not in raw and "\\x1b]0;pwned" in raw,
        next((x.strip() for x in plain.stdout.splitlines() if "stderr:" in x), ""),
    )


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="chaos-store-") as tmp:
        root = Path(tmp)
        for part in (
            signals,
            two_writers,
            resume_refusals,
            write_errors,
            readers,
            permissions,
            failures,
        ):
            part(root)
    failed = [name for name, ok, _ in results if not ok]
    print(f"\n{len(results) - len(failed)} of {len(results)} checks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
