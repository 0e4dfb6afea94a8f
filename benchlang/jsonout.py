"""The one strict JSON writer of every ``--json`` output (RFC 8259: no ``NaN``, no ``Infinity``).

Every command's document is an object that starts with ``"schema": N`` and ``"kind":
"benchlang.<command>"`` (docs/exports.md lists each schema). A number that is undefined is
written as ``null`` and its object says why in ``null_reasons`` (field -> sentence), made by
:func:`undefined`; a non-finite float that reaches :func:`dumps` unexplained is a bug and fails
loudly (``allow_nan=False``) with the place it was found, never as invalid JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from benchlang.errors import UserError


class UndefinedNumber(UserError):
    """A non-finite number reached the JSON writer without a reason: a benchlang bug."""


def finite(value: Any) -> float | None:
    """``value`` as a float when it is a finite number, else None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def undefined(fields: Mapping[str, Any], reasons: Mapping[str, str]) -> dict[str, Any]:
    """``fields`` with each non-finite number (also inside a list of numbers) written as None,
    and ``null_reasons`` naming why for every field so nulled: ``reasons[field]``, else
    ``reasons["*"]``, else "not defined for these data"; no ``null_reasons`` key when every
    number is defined."""
    out: dict[str, Any] = {}
    why: dict[str, str] = {}
    for key, value in fields.items():
        if isinstance(value, (list, tuple)) and any(_missing(v) for v in value):
            out[key] = [None if _missing(v) else v for v in value]
        elif _missing(value):
            out[key] = None
        else:
            out[key] = value
            continue
        why[key] = reasons.get(key) or reasons.get("*") or "not defined for these data"
    if why:
        out["null_reasons"] = {**dict(fields.get("null_reasons") or {}), **why}
    return out


def _missing(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def plain(value: Any, where: str = "$") -> Any:
    """JSON-ready data: mappings, sequences, numpy scalars and arrays as Python values,
    other objects by ``to_dict``; a non-finite float raises :class:`UndefinedNumber`."""
    if isinstance(value, Mapping):
        return {str(k): plain(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UndefinedNumber(
                f"the JSON output has an undefined number ({value}) at {where} without a "
                "reason; this is a benchlang bug, please report it",
                hint="the text output of the same command shows the result",
            )
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict) and not isinstance(value, type):
        return plain(to_dict(), where)
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return plain(tolist(), where)
    return str(value)


def document(kind: str, schema: int, body: Mapping[str, Any]) -> dict[str, Any]:
    """A command's JSON document: ``schema``, ``kind`` ("benchlang.<command>"), then ``body``
    (which must not hold either)."""
    if "schema" in body or "kind" in body:
        raise ValueError("a document's body has no field named schema or kind")
    return {"schema": schema, "kind": f"benchlang.{kind}", **body}


def dumps(value: Any, *, indent: int | None = 2) -> str:
    """``value`` as strict JSON text (``plain`` first, then ``allow_nan=False``)."""
    return json.dumps(plain(value), indent=indent, allow_nan=False)


def _refuse(constant: str) -> Any:
    raise ValueError(f"not strict JSON: {constant}")


def loads(text: str) -> Any:
    """Parse strict JSON: ``NaN``, ``Infinity`` and ``-Infinity`` are refused."""
    return json.loads(text, parse_constant=_refuse)
