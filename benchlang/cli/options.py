"""Argument types shared by the commands."""

from __future__ import annotations

import argparse
from pathlib import Path


def percent_argument(text: str) -> float:
    """A percentage in (0, 100): ``95``, ``95%`` or ``99.9``."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not 0.0 < value < 100.0:
        raise argparse.ArgumentTypeError(f"must lie strictly between 0 and 100: {text!r}")
    return value


def store_arguments(p: argparse.ArgumentParser, paths_help: str, *, several: bool) -> None:
    """The arguments ``store_and_spec`` and ``stores_and_spec`` read: ``STORE [SPEC]``
    (``STORE... [SPEC]`` when ``several``) and ``--store``, the positional store's older
    spelling."""
    p.add_argument(
        "paths", nargs="*", metavar=f"STORE{'...' if several else ''} [SPEC]", help=paths_help
    )
    p.add_argument("--store", help="the store, as the positional STORE (the older spelling)")


def store_and_spec(
    paths: list[str], store_option: str | None, command: str
) -> tuple[str, str | None]:
    """The store and the optional spec of a command that reads a run: ``STORE [SPEC]`` in
    either order, told apart by content (an SQLite file is a store), with ``--store`` kept as
    the older spelling of the positional store."""
    stores, spec = stores_and_spec(paths, store_option, command, several=False)
    return stores[0], spec


def stores_and_spec(
    paths: list[str], store_option: str | None, command: str, *, several: bool = True
) -> tuple[list[str], str | None]:
    """``STORE... [SPEC]``: the stores (several are the sessions of a campaign) and the
    optional spec, told apart by content."""
    from benchlang.app.stores import is_store
    from benchlang.errors import UserError

    usage = f"benchlang {command} STORE{'...' if several else ''} [SPEC]"
    for path in [*paths, *([store_option] if store_option else [])]:
        if not Path(path).is_file():
            raise UserError(f"{path}: no such file", usage)
    stores = [p for p in paths if is_store(p)]
    specs = [p for p in paths if p not in stores]
    if store_option is not None:
        stores.insert(0, store_option)
    if (len(stores) > 1 and not several) or len(specs) > 1:
        what = "stores" if several else "one store"
        raise UserError(
            f"{command} reads {what} and at most one spec, got {', '.join(stores + specs)}",
            usage,
        )
    if not stores:
        given = f" ({specs[0]} is not an SQLite store)" if specs else ""
        raise UserError(f"{command} needs the store of a run{given}", usage)
    if len(set(stores)) < len(stores):
        raise UserError(f"{command}: a store is given twice", usage)
    return stores, (specs[0] if specs else None)
