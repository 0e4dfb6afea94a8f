"""``benchlang hosts list|release STORE``: the leases of a store's runs (docs/plugins.md)."""

from __future__ import annotations

import argparse
import sys

from benchlang.cli import add_command
from benchlang.jsonout import document, dumps


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang hosts``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "The hosts a backend allocated for a store's runs (leases), and releasing the ones "
        "a killed run left held."
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = sub.add_parser("list", help="every lease: id, backend, state, hosts, resources")
    listing.add_argument("store", metavar="STORE", help="the SQLite store of a run")
    listing.add_argument("--json", action="store_true", help="one JSON document")
    release = sub.add_parser(
        "release", help="release the unreleased leases (the run's spec opens its backend)"
    )
    release.add_argument("store", metavar="STORE", help="the SQLite store of a run")
    release.add_argument("lease", metavar="LEASE", nargs="?", help="a lease id or its prefix")
    sweep = sub.add_parser(
        "sweep",
        help="find (and destroy) the machines tagged by benchlang leases, for a lost store",
    )
    sweep.add_argument("spec", metavar="SPEC", help="the spec whose hosts statement to use")
    sweep.add_argument(
        "--keep",
        metavar="STORE",
        action="append",
        default=[],
        help="a store whose held leases are kept (repeatable)",
    )
    sweep.add_argument("--dry-run", action="store_true", help="list, destroy nothing")
    p.set_defaults(func=run)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    add_command(subparsers, "hosts")


def run(args: argparse.Namespace) -> int:
    from benchlang.app.leases import describe, release_leases, stored_leases, sweep

    if args.action == "list":
        rows = [describe(s) for s in stored_leases(args.store)]
        if args.json:
            print(dumps(document("hosts", 1, {"leases": rows})))
            return 0
        _render(rows, args.store)
        return 0
    if args.action == "sweep":
        found = sweep(args.spec, args.keep, destroy=not args.dry_run)
        verb = "found" if args.dry_run else "destroyed"
        for line in found:
            print(f"{verb} {line}")
        if not found:
            print("no machine carries a benchlang lease tag (other than the kept leases)")
        return 0
    done = release_leases(args.store, args.lease)
    if not done:
        print(f"{args.store}: no lease is held")
    failed = 0
    for item in done:
        if item.error is None:
            print(f"released lease {item.lease.id} ({item.lease.kind})")
        else:
            failed += 1
            print(
                f"lease {item.lease.id} ({item.lease.kind}) not released: {item.error}",
                file=sys.stderr,
            )
    return 1 if failed else 0


def _render(rows: list[dict], store: str) -> None:
    from benchlang.report.table import render_table

    if not rows:
        print(f"{store}: no leases (no run here allocated hosts through a backend)")
        return
    table = []
    for row in rows:
        hosts = ", ".join(k if k == v else f"{k}={v}" for k, v in row["hosts"].items())
        what = "; ".join(" ".join(f"{k}={v}" for k, v in r.items()) for r in row["resources"])
        price = "" if row["price_per_hour"] is None else f"{row['price_per_hour']:g}/h"
        spent = "" if row["cost"] is None else f"{row['cost']:.4g}"
        if spent and row["released"] is None:
            spent += " so far"
        table.append(
            (
                row["id"][:12],
                row["kind"],
                row["state"],
                hosts,
                what,
                price,
                spent,
                row["acquired"],
                row["expires"] or "",
                row["released"] or "",
            )
        )
    render_table(
        [
            "lease",
            "backend",
            "state",
            "hosts",
            "resources",
            "price",
            "cost",
            "acquired",
            "expires",
            "released",
        ],
        table,
        title=f"leases in {store}",
    )
