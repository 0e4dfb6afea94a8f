"""Small words of the printed text, kept in one place so every command counts alike."""

from __future__ import annotations


def plural(n: int, word: str) -> str:
    """``1 round``, ``2 rounds``; a word already ending in s (``series``) is left as it is."""
    return f"{n} {word}" if n == 1 or word.endswith("s") else f"{n} {word}s"


def nested_counts(counts: tuple[int, ...] | list[int], names: tuple[str, ...] | list[str]) -> str:
    """The units of a nested design, outermost given first, each a total, said innermost
    first: ``25 rounds in 5 series`` (the earlier ``5 series x 25 rounds`` read as 125 rounds)."""
    parts = [plural(n, name) for n, name in zip(counts, names, strict=True)]
    return " in ".join(reversed(parts))
