"""Reading a stranger's JSON (a bundle's manifest, another tool's export) with a bound on its
nesting, so that no later ``str``, ``repr`` or numpy call recurses past Python's limit.

``json.loads`` itself stops at about 1,000 levels with a RecursionError, and a value nested
995 deep still breaks ``str()`` one call further down; the files benchlang reads nest 3 to 6
levels, so anything past :data:`MAX_DEPTH` is refused before it is looked at.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

MAX_DEPTH = 64


class TooDeep(ValueError):
    """A JSON document nested past the bound."""


def depth(value: Any, bound: int = MAX_DEPTH) -> int:
    """How deep ``value``'s arrays and objects nest (a scalar: 0), counted without recursion
    and stopping once past ``bound``."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        children: Iterable[Any]
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > bound:
            return deepest
        stack.extend((c, level + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def loads(text: str | bytes, bound: int = MAX_DEPTH) -> Any:
    """``json.loads`` refusing a document nested more than ``bound`` levels (TooDeep);
    ValueError, UnicodeError as ``json.loads`` raises them."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise TooDeep(f"nested more than {bound} levels") from None
    if depth(document, bound) > bound:
        raise TooDeep(f"nested more than {bound} levels")
    return document
