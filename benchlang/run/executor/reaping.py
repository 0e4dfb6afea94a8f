"""Nothing left running: every process a run started, found through /proc and killed by
process group (a trial runs in its own)."""

from __future__ import annotations

import os
import signal
import time


def _descendants(root: int) -> list[int]:
    """Live (not zombie) processes descending from ``root``, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if fields[0] in (b"Z", b"X"):
            continue
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def kill_descendants() -> int:
    """SIGKILL every process this one started, directly or not: each one's whole process group
    (a trial runs in its own), or the process alone when it shares this process's group.
    Repeats until none is left alive (a process may fork while its group is being killed).
    Returns how many processes were found. Safe to call from a signal handler."""
    me, own_group = os.getpid(), os.getpgrp()
    total = 0
    for _ in range(10):
        pids = _descendants(me)
        if not pids:
            break
        total += len(pids)
        for pid in pids:
            try:
                group = os.getpgid(pid)
                if group == own_group:
                    os.kill(pid, signal.SIGKILL)
                else:
                    os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
        time.sleep(0.005)
    return total
