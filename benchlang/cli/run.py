"""``benchlang run``: compile, execute through the backend, store, and summarise."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from benchlang.app.comparisons import compare_all
from benchlang.app.order import order_report
from benchlang.app.plan import plan_experiment
from benchlang.app.spec import forget_secrets
from benchlang.cli import add_command
from benchlang.cli.common import load_experiment, print_spec_profile
from benchlang.errors import UserError
from benchlang.report.analysis import analyze, build_record
from benchlang.report.compare_text import render_comparisons
from benchlang.report.data import load_data
from benchlang.report.order import render_order_report
from benchlang.report.results import failure_lines, render_run_summary
from benchlang.report.table import render_table
from benchlang.run.executor import Executor
from benchlang.run.progress import Progress
from benchlang.run.store import Store


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang run``; the lazy table in benchlang.cli calls this."""
    p.description = "Run every trial of a spec's plan, committing each to the store as it finishes."
    p.add_argument("spec", metavar="SPEC", help="the .bench spec to run")
    p.add_argument(
        "--store", help="SQLite results file (default: <spec name>.sqlite in the current directory)"
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue a run that was interrupted, without repeating finished trials; refuses a store that holds no run of this plan",
    )
    p.add_argument(
        "--resume-or-start",
        action="store_true",
        help="like --resume, but start the plan from zero when the store does not hold it yet (creating the store if missing)",
    )
    p.add_argument("--seed", type=int, help="override the spec's seed")
    p.add_argument(
        "--ignore-failure",
        "-i",
        action="store_true",
        help="exit 0 even when trials failed, and go on when every trial of the first round fails (as --keep-going); failed trials are stored and reported either way",
    )
    p.add_argument(
        "--keep-going",
        action="store_true",
        help="run every trial even when all trials of the first round fail (by default the run then stops after that round, shows the first failure and exits 1)",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="run although a host does not meet the spec's machine block; the record says what was forced past",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output: only the answer")
    p.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="the whole story: the per-configuration table, the record, the series KPIs and the "
        "tests (by default a run ends with the short answer; `benchlang analyze` and "
        "`benchlang record` show the rest later)",
    )
    for form, what in (
        ("json", "the versioned JSON document: per-trial rows, hosts, headline"),
        ("csv", "one CSV row per trial"),
        ("markdown", "a Markdown table with a relative column"),
    ):
        p.add_argument(
            f"--export-{form}", metavar="FILE", help=f"also write {what} (docs/exports.md)"
        )
    p.add_argument(
        "--report",
        metavar="FILE",
        help="also write the self-contained HTML report of the run (docs/report.md)",
    )
    p.set_defaults(func=run, run_parser=p)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang run`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "run")


# Options that say how a run goes, not which plan it is: left out of the resume command.
_NOT_PLAN = {"help", "store", "resume", "resume_or_start", "func", "run_parser"}


def resume_command(args: argparse.Namespace, store_path: Path) -> str:
    """The command that continues this run: the same spec and every option the user gave
    (the seed and whatever else shapes the plan), with the store spelled out and --resume."""
    import shlex

    words = ["benchlang", "run"]
    parser = getattr(args, "run_parser", None)
    for action in parser._actions if parser is not None else ():
        if action.dest in _NOT_PLAN or not hasattr(args, action.dest):
            continue
        value = getattr(args, action.dest)
        if not action.option_strings:
            words.append(str(value))
            continue
        if value is None or value is False or value == action.default:
            continue
        option = max(action.option_strings, key=len)
        if action.nargs == 0:
            words.append(option)
        else:
            for item in value if isinstance(value, list) else [value]:
                words += [option, str(item)]
    if parser is None:
        words.append(args.spec)
        if args.seed is not None:
            words += ["--seed", str(args.seed)]
    words += ["--store", str(store_path), "--resume"]
    return shlex.join(words)


class _Signals:
    """SIGINT and SIGTERM during ``run``: before trials run, unwind at once; while they run,
    hand the signal to the executor, which kills the running trials and stops (a second
    signal kills again whatever is left and cuts the cleanup short)."""

    def __init__(self) -> None:
        import signal

        self.signum: int | None = None
        self.executor: Executor | None = None
        self._previous = {
            sig: signal.signal(sig, self._handle) for sig in (signal.SIGINT, signal.SIGTERM)
        }

    def _handle(self, signum: int, _frame: object) -> None:
        first = self.signum is None
        if first:
            self.signum = signum
        if self.executor is not None:
            self.executor.interrupt(signum)
        elif first:
            raise KeyboardInterrupt

    def restore(self) -> None:
        import signal

        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}


def run(args: argparse.Namespace) -> int:
    import signal

    from benchlang.run.store import StoreWriteError

    signals = _Signals()
    store_path: Path | None = None
    started = False  # the plan is in the store: --resume can continue it
    try:
        experiment, backend, plan = plan_experiment(
            load_experiment(args.spec), args.spec, args.seed
        )
        forget_secrets(experiment)
        from benchlang.app.system import preflight, record_preflight

        checked = preflight(experiment, backend, getattr(args, "force", False))
        for line in checked.unmet if checked else ():
            print(f"warning: forced past: {line}", file=sys.stderr)
        store_path = Path(args.store or Path(args.spec).with_suffix(".sqlite").name)
        store = _open_store(args, store_path, plan)
        plan = _stored_identity(store, plan, args.spec)
        with store:
            store.add_plan(
                plan.hash,
                experiment.name,
                experiment.spec_hash,
                plan.seed,
                plan.json_text(),
                args.spec,
                Path(args.spec).read_text(encoding="utf-8"),
            )
            record_preflight(store, plan.hash, checked)
            started = True
            return _execute(args, signals, experiment, backend, plan, store, store_path)
    except KeyboardInterrupt:
        signals.restore()
        signum = signals.signum or signal.SIGINT
        where = (
            f"; continue with: {resume_command(args, store_path)}"
            if started and store_path is not None
            else ""
        )
        print(f"interrupted by {signal.Signals(signum).name}{where}", file=sys.stderr)
        return 128 + signum
    except StoreWriteError as err:
        signals.restore()
        print(f"benchlang: error: {err.message}", file=sys.stderr)
        if started and store_path is not None:
            print(
                f"  hint: {err.hint}; once fixed, continue with: {resume_command(args, store_path)}",
                file=sys.stderr,
            )
        else:
            print(f"  hint: {err.hint}", file=sys.stderr)
        return 1
    finally:
        signals.restore()


def _stored_identity(store: Store, plan, spec: str):
    """The stored plan when the spec differs from the stored run's only in what does not
    shape its trials (its analysis): the run continues it, analysed with this spec."""
    from benchlang.app.plan import adopt_stored_identity, matching_plan

    try:
        stored = matching_plan(store, plan)
        if stored is None or stored.plan_hash == plan.hash:
            return plan
        print(
            f"note: {spec} differs from the stored run's spec only in what does not shape its "
            f"trials: continuing plan {stored.plan_hash[:19]}, analysed with this spec",
            file=sys.stderr,
        )
        return adopt_stored_identity(plan, stored)
    except BaseException:
        store.close()
        raise


def _open_store(args: argparse.Namespace, store_path: Path, plan) -> Store:
    """The store, opened for writing, after the refusals of docs/store.md#resume."""
    if args.resume and not args.resume_or_start:
        hint = "start the run without --resume, or give the --store it wrote to"
        if not store_path.exists():
            raise UserError(f"no store at {store_path}: nothing to resume", hint)
        if store_path.is_file() and store_path.stat().st_size == 0:
            raise UserError(f"{store_path} is empty: nothing to resume", hint)
    store = Store(store_path, create=not args.resume or args.resume_or_start, write=True)
    try:
        resume = args.resume or args.resume_or_start
        from benchlang.app.plan import matching_plan

        if args.resume and not args.resume_or_start and matching_plan(store, plan) is None:
            others = store.plans()
            if not others:
                raise UserError(
                    f"{store_path} holds no run yet: nothing to resume",
                    "start the run without --resume",
                )
            held = ", ".join(f"{p.plan_hash[:19]} ({p.experiment}, seed {p.seed})" for p in others)
            raise UserError(
                f"{store_path} holds no run of this plan ({plan.hash[:19]}, seed {plan.seed}), only {held}",
                "resume with the spec and --seed of the run (a change to its factors, benchmarks, design or sizes, or to the seed, makes a new plan; a change to its analysis does not), or start this plan there with --resume-or-start",
            )
        same = matching_plan(store, plan)
        done = store.finished_trials(same.plan_hash) if same is not None else set()
        if done and not resume:
            raise UserError(
                f"{store_path} already holds {len(done)} trials of this plan",
                "continue it with --resume, or give another --store",
            )
    except BaseException:
        store.close()
        raise
    return store


def _execute(args, signals, experiment, backend, plan, store, store_path) -> int:
    import signal

    from benchlang.run.progress import printable

    done = store.finished_trials(plan.hash)
    progress = Progress(plan.n_trials, len(done), quiet=args.quiet)
    if not args.quiet:
        progress.note(
            f"running {plan.n_trials - len(done)} of {plan.n_trials} trials of {experiment.name} into {store_path}"
        )
    executor = Executor(
        experiment,
        plan,
        backend,
        store,
        progress,
        reap=True,
        spec_dir=str(Path(args.spec).resolve().parent),
        fail_fast=not (getattr(args, "keep_going", False) or args.ignore_failure),
    )
    signals.executor = executor
    try:
        summary = asyncio.run(executor.run())
    finally:
        progress.close()
    if summary.interrupted is not None:
        held = len(store.finished_trials(plan.hash))
        print(
            f"interrupted by {signal.Signals(summary.interrupted).name}: the running trials were stopped and will run again;"
            f" {held} of {plan.n_trials} trials are in {store_path}; continue with: {resume_command(args, store_path)}",
            file=sys.stderr,
        )
        return 128 + summary.interrupted
    signals.executor = None
    signals.restore()
    if summary.first_round_failed is not None:
        _report_failed_first_round(args, summary.first_round_failed, store_path)
        return 1
    missing = plan.n_trials - len(store.finished_trials(plan.hash)) - summary.not_needed
    if missing:
        print(
            f"PARTIAL: {missing} of {plan.n_trials} planned trials did not run; the results below use the {plan.n_trials - missing - summary.not_needed} that did"
        )
    data = load_data(store, plan.hash, experiment=experiment)
    verbose = getattr(args, "verbose", False)
    if verbose or not experiment.kpis:
        render_run_summary(data)
    if experiment.kpis:
        analysis = analyze(data)
        from benchlang.app.history.kept import keep_points

        keep_points(store, data, analysis)  # what history add takes (docs/history.md)
    for item in experiment.profiles:
        print_spec_profile(item)
    if experiment.comparisons:
        render_comparisons(compare_all(data))
    if experiment.order_dependence is not None:
        render_order_report(order_report(data, None, experiment.order_dependence["alpha"]))
    if experiment.equal_hosts is not None:
        from benchlang.report.equal_hosts import host_agreement, render_host_agreement

        render_host_agreement(host_agreement(data))
    from benchlang.report.run_end import render_record, render_run_end, write_exports

    if experiment.kpis and verbose:
        print()
        render_record(build_record(data, analysis))
    write_exports(data, analysis if experiment.kpis else None, args)
    if args.report:
        from benchlang.app.report import write_report

        size, seconds = write_report(store_path, args.report, plan.hash, experiment)
        print(f"wrote the report to {args.report} ({size / 1024:.0f} KiB in {seconds:.1f} s)")
    for host, message in summary.hosts_down:
        print(printable(f"host {host} stopped: {message}"), file=sys.stderr)
    stops = store.stops(plan.hash)
    if stops:
        labels = {c.index: c.label for c in plan.configurations}
        render_table(
            ["configuration", "series", "stopped after", "action", "rule", "class", "reason"],
            [(labels[c], s, n, a, r, k, why) for s, c, n, a, r, k, why in stops],
            title=f"stopping ({experiment.stop.kind}): {summary.not_needed} planned trials not needed",
        )
    failed = store.count_failed(plan.hash)
    failures = [f"{failed} trials failed:"] if failed else []
    failures += [printable(line) for line in failure_lines(store, plan.hash)] if failed else []
    render_run_end(
        data,
        analysis if experiment.kpis else None,
        str(store_path),
        failures,
        verbose=verbose,
        more=getattr(args, "store_kept", True),
    )
    if missing:
        print(
            f"{missing} trials did not run; fix the cause and continue with: {resume_command(args, store_path)}",
            file=sys.stderr,
        )
        return 1
    if failed and not args.ignore_failure:
        print(
            f"{failed} of {plan.n_trials} trials failed (exit status 1); accept failed trials with --ignore-failure (-i)",
            file=sys.stderr,
        )
        return 1
    return 0


def _report_failed_first_round(args, failed, store_path: Path) -> None:
    """Every trial of the first round failed and the run stopped: say so in
    a few lines with the first failure's reason, exit status and stderr tail, as hyperfine
    does when a command fails."""
    from benchlang.run.progress import printable

    first = failed.first
    lines = [
        f"stopped after the first round: all {failed.trials} of its trials failed",
        f"first failure: trial {first.trial} ({first.label}) on {failed.host}: {first.reason}",
        f"  exit status: {first.exit_status}" + (" (timed out)" if first.timed_out else ""),
    ]
    err = [x for x in first.stderr_tail.decode(errors="replace").splitlines() if x.strip()]
    lines += ["  stderr (last lines):", *(f"    {x[:200]}" for x in err[-5:])] if err else []
    lines += ["  stderr: (empty)"] if not err else []
    lines.append(
        f"the failed trials are in {store_path} (benchlang results {store_path} --format json);"
        f" fix the command and continue with: {resume_command(args, store_path)}"
    )
    lines.append("or run every trial anyway with --keep-going")
    for line in lines:
        print(printable(line), file=sys.stderr)
