"""``benchlang replicate``: check a bundle, rerun its plan here, and say whether it agrees."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from benchlang.app.publish.bundle import files_read
from benchlang.app.publish.bundle_archive import shown
from benchlang.app.publish.replicate import current_store, judge, open_bundle, rerun
from benchlang.cli import add_command
from benchlang.errors import UserError
from benchlang.lang.rewrite import replace_hosts

if TYPE_CHECKING:
    from benchlang.app.publish.consent import Preview

SHOWN_PROBLEMS = 10
EXIT = {"agree": 0, "disagree": 1, "could not compare": 3}


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang replicate``; the lazy table in benchlang.cli calls this."""
    p.description = (
        "Check a bundle (signature, bounds, hashes, the plan hash its spec compiles to, "
        "versions), show every command it would run and ask before running them (or only "
        "re-analyse it with --analyze-only), then judge the replication per metric and "
        "configuration: the new KPIs against the published variability score (TriScale), "
        "the shift with its interval, the host facts that differ. Exit status: 0 agree, "
        "1 disagree, 3 could not compare, 2 a bad bundle, a refusal or a bad option "
        "(docs/replicate.md)."
    )
    p.add_argument("bundle", metavar="BUNDLE", help="a bundle made by `benchlang bundle` (.tar.gz)")
    p.add_argument("--workdir", help="where to extract and run (default: BUNDLE's name + .d)")
    p.add_argument(
        "--analyze-only",
        action="store_true",
        help="check and re-analyse the published trials; run nothing",
    )
    p.add_argument("--store", help="the replication's store (default: WORKDIR/replication.sqlite)")
    p.add_argument(
        "--hosts",
        metavar="STATEMENT",
        help="run on these hosts instead of the published ones: the spec's hosts statement "
        'without the keyword, e.g. \'ssh { nodes ["n1", "n2"] user "me" }\' or \'local\'',
    )
    p.add_argument(
        "--plan-hash",
        metavar="HASH",
        help="the plan hash the paper publishes: refuse a bundle whose spec compiles to another",
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument(
        "--allowed-signers",
        metavar="FILE",
        help="verify the bundle's signature against an OpenSSH allowed-signers file before "
        "extracting it; refuse an unsigned, changed or foreign bundle",
    )
    who.add_argument(
        "--signer",
        metavar="FINGERPRINT",
        help="verify that the bundle is signed by the key with this fingerprint (SHA256:...), "
        "as the paper publishes it",
    )
    p.add_argument(
        "--yes", action="store_true", help="run the commands shown without asking (scripts)"
    )
    p.add_argument(
        "--sandbox",
        action="store_true",
        help="run the rerun under bubblewrap: its own user, PID, IPC, UTS and cgroup "
        "namespaces, no capabilities, no terminal, a root of the system's programs only "
        "(no home, /run or host sockets), writable only the bundle's directory, no network "
        "unless the hosts are remote; refuse when bwrap or the namespaces are missing",
    )
    p.set_defaults(func=run)


def _number(x: float) -> str:
    return f"{x:.4g}" if math.isfinite(x) else "-"


def _verifier(args: argparse.Namespace, said: list[str]):
    if not (args.allowed_signers or args.signer):
        return None
    from benchlang.app.publish.signing import verify

    def check(manifest: bytes, signature: bytes | None) -> None:
        signer = verify(
            manifest, signature, allowed_signers=args.allowed_signers, fingerprint=args.signer
        )
        said.append(f"signature: good, by {signer.fingerprint}")

    return check


def _shown(preview: Preview, sandbox: bool) -> str:
    width = max(len(what) for what, _ in preview.commands)
    lines = [
        f"plan {preview.plan_hash}: compare it with the paper's",
        f"it would run {preview.trials} trials on {preview.hosts_kind} hosts "
        f"{', '.join(preview.hosts)}, {preview.estimate}, these commands:",
        *(f"  {what:<{width}}  {command}" for what, command in preview.commands),
    ]
    if preview.not_read:
        lines.append(
            "outside the bundle, named by its spec and not read before your answer (the run "
            "would read them): " + ", ".join(preview.not_read)
        )
    if not preview.backend_opened:
        lines.append("its backend was not opened (it needs a file above): power actions "
                     "are listed as the commands they stand for")  # fmt: skip
    if sandbox:
        network = (
            "kept, the hosts are reached over it (so are this machine's abstract unix sockets)"
            if preview.network
            else "cut"
        )
        lines.append(
            f"sandbox: bubblewrap, read-only but the bundle's directory, network {network}; "
            "own user, PID, IPC, UTS and cgroup namespaces, no capabilities, no terminal, "
            "no home, /run or agent variables"
        )
    return "\n".join(lines)


def _consent(args: argparse.Namespace, shown_text: str) -> None:
    """Return on an interactive yes (or --yes); refuse otherwise, with one line. The question
    goes where the answer comes from: stdin and stdout when both are the terminal, else the
    controlling terminal (``/dev/tty``), which is shown the commands first when stdout is
    not the terminal (redirected to a log)."""
    if args.yes:
        return
    question = "run these commands on this machine? [y/N] "
    try:
        if sys.stdin.isatty() and sys.stdout.isatty():
            answer = input(question)
        else:
            with open("/dev/tty", "r+", encoding="utf-8") as tty:
                if not sys.stdout.isatty():
                    tty.write(shown_text + "\n")
                tty.write(question)
                tty.flush()
                answer = tty.readline()
    except OSError:
        raise UserError(
            "no terminal to ask before running the bundle's commands: nothing was run",
            "read the commands above, then rerun with --yes (or with --analyze-only)",
        ) from None
    except EOFError:
        answer = ""
    if answer.strip().lower() not in ("y", "yes"):
        raise UserError("not confirmed: nothing was run")


def run(args: argparse.Namespace) -> int:
    from benchlang.app.publish.consent import check_plan, check_store, preview
    from benchlang.app.publish.signing import signer_of

    bundle = Path(args.bundle)
    workdir = Path(args.workdir or f"{bundle.name.removesuffix('.tar.gz')}.d").resolve()
    said: list[str] = []
    opened = open_bundle(bundle, workdir, _verifier(args, said))
    print(f"bundle {bundle}: experiment {shown(opened.experiment)}, plan {opened.plan_hash[:23]}")
    for line in said:
        print(line)
    if not said and opened.signature is not None:
        try:
            claimed = f"signed by {signer_of(opened.signature).fingerprint}, not verified"
        except UserError as err:
            claimed = err.message
        print(f"note: {claimed} (pass --signer or --allowed-signers to verify)")
    for note in opened.version_notes:
        print(f"note: {note}")
    if opened.problems:
        for problem in opened.problems[:SHOWN_PROBLEMS]:
            print(f"problem: {problem}")
        if len(opened.problems) > SHOWN_PROBLEMS:
            print(f"problem: ... and {len(opened.problems) - SHOWN_PROBLEMS} more")
        raise UserError(f"{bundle} does not match its manifest: it cannot be trusted")
    published = check_plan(
        opened.spec, opened.root / "plan.json", opened.plan_hash, args.plan_hash, opened.root
    )
    check_store(opened.store, published.plan)
    migrated = current_store(opened.store)
    if migrated is not None:
        print(f"note: {migrated}")
    print(
        "plan hash: the bundled spec compiles to the plan its manifest states"
        + (" and to the one given with --plan-hash" if args.plan_hash else "")
        + (
            f" (outside the bundle, not read: {', '.join(published.not_read)})"
            if published.not_read
            else ""
        )
    )
    if args.analyze_only:
        replication = opened.store
        print("re-analysing the published trials (--analyze-only)")
    else:
        replication = Path(args.store or workdir / "replication.sqlite").resolve()
        spec = opened.spec
        if args.hosts:
            spec = spec.with_name(f"{spec.stem}.hosts{spec.suffix}")
            spec.write_text(replace_hosts(opened.spec.read_text(), args.hosts, str(opened.spec)))
            print(f"hosts replaced: {spec.name} runs on 'hosts {args.hosts.strip()}'")
        shown_preview = preview(
            spec,
            published,
            opened.store,
            bool(args.hosts),
            opened.root,
            tuple(files_read(args.hosts or "")),
        )
        if args.sandbox:
            from benchlang.app.publish.sandbox import bwrap

            bwrap()  # refuses before asking when no sandbox can be made here
        text = _shown(shown_preview, args.sandbox)
        print(text, flush=True)
        _consent(args, text)
        status = rerun(
            spec,
            replication,
            published.experiment.seed,
            sandbox=opened.root if args.sandbox else None,
            network=shown_preview.network,
        )
        if status not in (0, 1):
            print(f"the rerun stopped with exit status {status}")
            return status
    result = judge(opened.store, replication)
    _render_verdicts(opened.store, result.verdicts)
    for fact in result.facts_differ:
        print(f"facts differ: {fact}")
    for note in result.notes:
        print(f"note: {note}")
    disagreeing = [
        f"{v.metric} {v.configuration}" for v in result.verdicts if v.verdict == "disagree"
    ]
    outcome = result.outcome
    print(
        f"replication: {outcome.upper()}" + (f" ({'; '.join(disagreeing)})" if disagreeing else "")
    )
    return EXIT[outcome]


def _render_verdicts(store: Path, verdicts) -> None:
    """The verdicts as an aligned table, each metric in its one display unit (the unit the
    published store's other views use), then each verdict's reason."""
    from benchlang.app.stores import load_store
    from benchlang.report.table import format_quantity, metric_scale, render_table

    data = load_store(str(store), None)
    scales = {
        n: metric_scale(m.values[data.table.ok], m.metric.unit) for n, m in data.metrics.items()
    }
    rows = []
    for v in verdicts:
        unit, factor = scales.get(v.metric, (None, 1.0))

        def q(x: float, factor: float = factor) -> str:
            return format_quantity(x, None, scale=(None, factor)) if math.isfinite(x) else "-"

        bounds = f"[{q(v.bounds[0])}, {q(v.bounds[1])}]" if v.bounds else "-"
        kpis = ", ".join(q(k) for k in v.new_kpis) or "-"
        shift = f"{_number(v.ratio)} [{_number(v.lower)}, {_number(v.upper)}]"
        name = f"{v.metric} ({unit})" if unit else v.metric
        rows.append([name, v.configuration, bounds, kpis, shift, v.verdict])
    headers = ["metric", "configuration", "published score", "new KPIs", "new/published [95%]"]
    align = ["left", "left", "right", "right", "right", "left"]
    render_table([*headers, "verdict"], rows, align=align)
    for v in verdicts:
        print(f"{v.metric}  {v.configuration}: {v.verdict}: {v.why}")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang replicate`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "replicate")
