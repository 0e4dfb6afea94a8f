"""``benchlang store migrate STORE``: rewrite a store of an earlier schema (docs/store.md)."""

from __future__ import annotations

import argparse

from benchlang.cli import add_command


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang store``; the lazy table in benchlang.cli calls this."""
    p.description = "Maintain a store: migrate one of an earlier schema to the current one."
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    migrate = sub.add_parser(
        "migrate",
        help="rewrite the store in the current schema, checked, keeping the original beside it",
        description=(
            "Write the store anew in the current schema beside it, check that the copy holds "
            "the same trials and values, swap it in (one rename) and keep the original as "
            "STORE.v<N>.bak."
        ),
    )
    migrate.add_argument("store", metavar="STORE", help="the SQLite store of a run")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from benchlang.app.store_migrate import migrate_store

    done = migrate_store(args.store)
    if done.before == done.after:
        print(f"{done.store} has store schema {done.after} already: nothing to migrate")
        return 0
    print(
        f"migrated {done.store} from schema {done.before} to {done.after}: {done.trials} trials "
        f"and {done.measures} measure values compared equal; "
        f"{done.bytes_before / 1e6:.3g} MB -> {done.bytes_after / 1e6:.3g} MB; "
        f"the original is kept as {done.backup}"
    )
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    add_command(subparsers, "store")
