"""Why the local backend spawns commands from the C launcher: a child of a large process
inherits that process's memory in its ``ru_maxrss`` (docs/measures.md#why-max_rss-needs-the-launcher).

At exec Linux sets the new program's ``signal->maxrss`` from the replaced address space's
peak (fs/exec.c, ``exec_mmap`` -> ``setmax_mm_hiwater_rss``). A ``posix_spawn``/``vfork``
child runs on its parent's address space until exec, so `true` reports the parent's peak; a
``fork`` child's copy starts at the parent's current resident size; ``5`` written to
``/proc/self/clear_refs`` (man 5 proc) lowers the peak only to the current size. This script
holds 400 MiB, releases it, and prints `true`'s ``ru_maxrss`` each way, beside `true` under
GNU time (a small parent, as the launcher is).

    python benchmarks/maxrss_inheritance.py
"""

from __future__ import annotations

import mmap
import os
import shutil
import subprocess

PEAK = 400 << 20


def status(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def child_maxrss(how: str) -> int:
    """``ru_maxrss`` (KiB) of `true` started from this process by ``how``."""
    if how == "posix_spawn":
        pid = os.posix_spawn("/bin/true", ["true"], {})
    else:
        pid = os.fork()
        if pid == 0:
            os.execv("/bin/true", ["true"])
    return os.wait4(pid, 0)[2].ru_maxrss


def row(state: str) -> None:
    spawned, forked = child_maxrss("posix_spawn"), child_maxrss("fork")
    print(f"{state:<42} {status('VmHWM'):>10,} {status('VmRSS'):>10,} {spawned:>12,} {forked:>10,}")


def main() -> None:
    print(f"{'this process':<42} {'VmHWM':>10} {'VmRSS':>10} {'posix_spawn':>12} {'fork':>10}")
    print(f"{'(KiB; the last two: ru_maxrss of `true`)':<42}")
    row("as started")
    region = mmap.mmap(-1, PEAK, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    page = b"x" * mmap.PAGESIZE
    for _ in range(PEAK // mmap.PAGESIZE):
        region.write(page)  # private pages, as a Python heap's
    row("holding 400 MiB")
    region.close()
    row("after releasing it (VmHWM keeps the peak)")
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    row("after clear_refs 5 (peak = current)")
    if shutil.which("time") or os.path.exists("/usr/bin/time"):
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "true"], capture_output=True, text=True, check=False
        )
        print(f"`true` under GNU time (%M): {done.stderr.strip()} KiB")


if __name__ == "__main__":
    main()
