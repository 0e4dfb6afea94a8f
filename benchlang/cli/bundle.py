"""``benchlang bundle``: a deterministic archive of a run to publish with a paper."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchlang.app.publish.bundle import bundle
from benchlang.cli import add_command


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang bundle``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Write one archive with the spec and every file it reads, the plan, the store and its "
        "trials as CSV, the reproducibility record, host facts, versions and a manifest of "
        "SHA-256 hashes; the same store gives the same bytes (docs/replicate.md)."
    )
    p.add_argument("store", metavar="STORE", help="the SQLite store of the run to publish")
    p.add_argument(
        "spec", metavar="SPEC", nargs="?", help="the spec (its directory holds the files it reads)"
    )
    p.add_argument("-o", "--output", help="archive path (default: EXPERIMENT.benchlang.tar.gz)")
    p.add_argument("--plan", help="plan hash (default: the store's latest)")
    p.add_argument(
        "--include",
        action="append",
        default=[],
        metavar="FILE",
        help="a file the commands use that the spec cannot name (a script, an input), "
        "relative to the spec's directory; repeatable",
    )
    p.add_argument(
        "--sign",
        metavar="KEY",
        help="sign the manifest with this OpenSSH key (ssh-keygen -Y sign -n benchlang-bundle; "
        "a private key file, or a public key whose private half is in ssh-agent); prints the "
        "fingerprint for the paper",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    spec_dir = Path(args.spec).parent if args.spec else None
    output = args.output
    if output is None:
        from benchlang.run.store import Store

        with Store(args.store) as store:
            output = f"{store.plan(args.plan).experiment}.benchlang.tar.gz"
    made = bundle(
        args.store,
        output,
        spec_dir=spec_dir,
        plan_hash=args.plan,
        include=args.include,
        sign=args.sign,
    )
    size = made.path.stat().st_size
    print(
        f"bundled experiment {made.experiment} (plan {made.plan_hash[:19]}): "
        f"{len(made.members) + 1} files, {size:,} bytes -> {made.path}"
    )
    print(f"plan hash (publish it in full): {made.plan_hash}")
    if made.signer is not None:
        print(f"signed by {made.signer.fingerprint} (publish it; readers pass --signer)")
        print(
            f'allowed-signers line: PRINCIPAL namespaces="benchlang-bundle" '
            f"{made.signer.public_key}"
        )
    for note in made.notes:
        print(f"note: {note}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang bundle`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "bundle")
