"""benchlang: performance experiments that are rigorous by default.

The Python API (docs/api.md) is this module's ``__all__``: ``load_spec``, ``open_store``,
``UserError`` and ``SpecInvalid``. Its names resolve on first use (PEP 562) through the table
``API`` (name -> module, attribute), as the CLI's commands do through its ``COMMANDS``: so
``import benchlang`` (and ``benchlang --version``) stays light, and the modules of every layer
that read ``__version__`` from here do not, through this module, import ``benchlang.app``.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

API: dict[str, tuple[str, str]] = {
    "load_spec": ("benchlang.app.api", "load_spec"),
    "open_store": ("benchlang.app.api", "open_store"),
    "SpecInvalid": ("benchlang.app.api", "SpecInvalid"),
    "UserError": ("benchlang.errors", "UserError"),
}
__all__ = ["__version__", *API]


def __getattr__(name: str) -> Any:
    if name not in API:
        raise AttributeError(f"module 'benchlang' has no attribute {name!r}")
    module, attribute = API[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
