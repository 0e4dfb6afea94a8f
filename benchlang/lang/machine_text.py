"""CPU lists and memory sizes as the kernel and people write them: ``0-3,6`` (cpuset(7)'s
"List format", also sysfs's ``isolated`` and ``online``) and ``1 GiB``. Pure, standard library
only: the checker, the host-state probe and the record share it."""

from __future__ import annotations

from collections.abc import Iterable

_BINARY = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def cpu_ranges(cpus: Iterable[int]) -> str:
    """``(0, 1, 2, 3, 6)`` -> ``"0-3,6"``; nothing -> ``""``."""
    out: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """cpuset(7)'s list format (``0-3,6``, ``0-7:2`` strides too) as sorted CPU numbers;
    raises ValueError on anything else. An empty string is no CPU."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        span, _, stride = part.partition(":")
        first, _, last = span.partition("-")
        step = int(stride) if stride else 1
        cpus.update(range(int(first), int(last or first) + 1, step))
    return tuple(sorted(cpus))


def format_bytes(size: int) -> str:
    """A byte count in the largest binary unit that divides it (1073741824 -> "1 GiB"),
    else in bytes."""
    for unit, factor in _BINARY:
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} B"
