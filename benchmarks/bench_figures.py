"""The papers' figures at 100,000 trials (issue 36): what they add to `benchlang report`, and
the time to export one with `benchlang figure` (targets: at most 2 s more than the report
without them; an export under 1 s), beside what matplotlib costs for the same panels with no
data at all (the floor under both targets on this machine).

The store is bench_store_scale's (a 10-configuration spec, 100 series, a KPI and a variability
score); a second, small one (``--small-trials``, 5,000 by default: make_store's fewest, 5 runs
per series) is made by the same helper. Commands run as a user runs them (a new process each:
start-up, the store read and analysed, the drawing), interleaved, ``--repeat`` times; medians of
wall and CPU seconds (the children's user + system time: steadier than wall time on a shared
machine). The rows:

- ``baseline: report --no-figures``: today's page without its figures section (the same
  analyses, tables and the plots no figure draws); ``report (every figure)``: the report, its
  CPU over the baseline judged against +2 s. The same two on the small store, each over its own
  baseline, then one line with both figures' costs: if the cost is matplotlib's per figure, not
  the data's, it hardly moves with the trials.
- With ``--before REV`` also the report of a git revision before the figures (extracted with
  ``git archive`` into a temporary directory and run from there; e.g. ``ba910a3``, the commit
  before the figures landed, with ``--patch-from 347ecd0`` for the report/hosts.py its analysis
  imports but its tree lacked; with ``--before-exports`` its exports too).
- Floors, processes that do only what every figure command pays: importing numpy; importing
  numpy and matplotlib.figure (their difference is matplotlib's import); matplotlib writing a
  PDF of one line with axis labels in TrueType fonts (its PDF backend, fontTools, a font subset).
- ``figure NAME -o .pdf``: each applicable figure exported alone, its CPU over the PDF floor,
  judged against 1 s. ``figure --all --format pdf|svg``: every figure in one command (the store
  read, analysed and matplotlib loaded once), its CPU per figure written (the files counted),
  judged against 1 s per figure.
- In process (CPU via ``time.process_time``), the panels' floor: each figure drawn as SVG by
  ``report.figures.render.draw`` as the report draws it, and its skeleton, the same drawing with
  every data mark removed after the drawer ran (each axes' lines, collections, patches and
  images; frames, ticks, labels, titles, legends and notes kept), with its number of axes. The
  skeleton's total plus matplotlib's import is what the papers' panels cost before any value is
  drawn, set against the +2 s budget.
- Last, in process, the time to build each figure's numbers and to draw it as SVG and PDF (so a
  slow figure is named), and its build and SVG on the small store: what grows with the trials.

    python benchmarks/bench_figures.py [--trials 100000] [--small-trials 5000] [--repeat 3]
        [--keep DIR] [--before REV [--patch-from REV] [--before-exports]] [--exports NAME,NAME]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _figures_floor import in_process, panels_floor
from bench_store_scale import store_in

ROOT = Path(__file__).resolve().parents[1]
PDF_FLOOR = "floor: matplotlib's PDF of one line"
ONE_LINE_PDF = (
    "import io, matplotlib; from matplotlib.figure import Figure; "
    "from matplotlib.backends.backend_pdf import FigureCanvasPdf; "
    "matplotlib.rcParams['pdf.fonttype'] = 42; f = Figure(layout='constrained'); "
    "a = f.subplots(); a.plot([0, 1]); a.set_xlabel('configuration'); a.set_ylabel('time (ms)'); "
    "FigureCanvasPdf(f).print_pdf(io.BytesIO())"
)


def children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def command(argv: list[str], env: dict | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one command, which must succeed; with ``env`` (a revision's
    tree on PYTHONPATH) run from that tree, so ``-m benchlang`` finds it before this one."""
    cwd = env["PYTHONPATH"] if env else None
    before, start = children_cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    wall, cpu = time.perf_counter() - start, children_cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr[-2000:]}")
    return wall, cpu


def revision_tree(rev: str, patch_from: str | None, into: Path) -> Path:
    """The package and grammars of ``rev``, extracted; report/hosts.py from ``patch_from``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "benchlang", "grammars"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    if patch_from:
        hosts = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{patch_from}:benchlang/report/hosts.py"],
            capture_output=True,
            check=True,
        ).stdout
        (into / "benchlang" / "report" / "hosts.py").write_bytes(hosts)
    return into


SMALLEST = 5_000
"""make_store's smallest store: 10 configurations x 100 series x 5 runs, the fewest runs its
KPI (a median at 95% confidence) accepts; only the runs per series differ from the big one."""
BASELINE = "baseline: report --no-figures"
EVERY = "report (every figure)"
IMPORT_FLOOR = "floor: import numpy, matplotlib.figure"
NUMPY_FLOOR = "floor: import numpy"


def cases_of(
    args: argparse.Namespace, stores: tuple[Path, Path, Path], figures: list[str], env: dict | None
) -> dict[str, tuple[list[str], dict | None]]:
    """Every command to time, by its row's name: (argv, the environment of ``--before``'s tree
    or None). ``stores``: (directory, the store, the small store)."""
    root, store, small = stores
    benchlang = [sys.executable, "-m", "benchlang"]
    report = [*benchlang, "report"]
    few = f"{args.small_trials:,} trials"
    cases: dict[str, tuple[list[str], dict | None]] = {
        BASELINE: ([*report, str(store), "-o", str(root / "bare.html"), "--no-figures"], None),
        EVERY: ([*report, str(store), "-o", str(root / "report.html")], None),
        f"baseline at {few}": (
            [*report, str(small), "-o", str(root / "small-bare.html"), "--no-figures"],
            None,
        ),
        f"report at {few}": ([*report, str(small), "-o", str(root / "small.html")], None),
    }
    if args.before:
        cases[f"report at {args.before}"] = (
            [*report, str(store), "-o", str(root / "before.html")],
            env,
        )
    cases[NUMPY_FLOOR] = ([sys.executable, "-c", "import numpy"], None)
    cases[IMPORT_FLOOR] = ([sys.executable, "-c", "import numpy, matplotlib.figure"], None)
    cases[PDF_FLOOR] = ([sys.executable, "-c", ONE_LINE_PDF], None)
    for name in figures:
        cases[f"figure {name} -o .pdf"] = (
            [*benchlang, "figure", str(store), name, "-o", str(root / f"{name}.pdf")],
            None,
        )
        if args.before and args.before_exports:
            cases[f"figure {name} at {args.before}"] = (
                [*benchlang, "figure", str(store), name, "-o", str(root / f"before-{name}.pdf")],
                env,
            )
    for fmt in ("pdf", "svg"):
        out = root / f"all-{fmt}"
        shutil.rmtree(out, ignore_errors=True)  # the files of this run counted, no older ones
        cases[f"figure --all --format {fmt}"] = (
            [*benchlang, "figure", str(store), "--all", "-o", str(out), "--format", fmt],
            None,
        )
    return cases


def table(med: dict[str, tuple[float, float]], args: argparse.Namespace, root: Path) -> None:
    """The commands' medians, each with its CPU over what it is compared to, and a verdict
    where a goal applies (report: +2 s over the baseline; an export, and --all per figure
    written: 1 s)."""
    base, floor = med[BASELINE][1], med[PDF_FLOOR][1]
    small = med[f"baseline at {args.small_trials:,} trials"][1]
    print(f"{'command':44} {'seconds':>8} {'CPU s':>6} {'CPU over':>16}")
    for name, (wall, cpu) in med.items():
        verdict, extra = "", " " * 16
        if name.startswith(("report", "baseline")):
            if name.endswith(f"at {args.small_trials:,} trials"):
                extra = f"{cpu - small:+7.2f} its baseln"
            else:
                extra = f"{cpu - base:+7.2f} baseline"
        elif name.startswith("figure --all"):
            written = len(list((root / f"all-{name.rsplit(' ', 1)[1]}").iterdir()))
            extra = f"{cpu / written:7.2f} /fig, {written:2}"
            verdict = "  ok" if cpu / written <= 1.0 else "  misses 1 s/figure"
        elif name.startswith("figure "):
            extra = f"{cpu - floor:+7.2f} PDF floor"
        if name == EVERY:
            verdict = "  ok" if cpu - base <= 2.0 else "  misses +2 s"
        elif name.startswith("figure ") and not name.startswith("figure --all"):
            verdict = "  ok" if cpu <= 1.0 else "  misses 1 s"
        print(f"{name:44} {wall:8.2f} {cpu:6.2f} {extra}{verdict}")


def figures_shown(page: Path) -> int:
    return page.read_text(encoding="utf-8").count("<figure class='plot' id=\"fig-")


def by_trials(med: dict[str, tuple[float, float]], args: argparse.Namespace, root: Path) -> None:
    """The figures' cost (report minus report --no-figures, CPU) at both sizes of store."""
    few = f"at {args.small_trials:,} trials"
    big = med[EVERY][1] - med[BASELINE][1]
    small = med[f"report {few}"][1] - med[f"baseline {few}"][1]
    print(
        f"the figures' cost (report - report --no-figures, CPU s): {big:+.2f} at "
        f"{args.trials:,} trials ({figures_shown(root / 'report.html')} figures), {small:+.2f} "
        f"{few} ({figures_shown(root / 'small.html')} figures)"
    )


def floor_table(panels: list, med: dict[str, tuple[float, float]]) -> None:
    """Each figure's SVG as the report draws it beside its skeleton (no data marks), and the
    argument: skeleton + matplotlib's import against the +2 s budget."""
    print(f"{'in process, SVG as the report draws it:':44} {'axes':>5} {'full':>6} {'skeletn':>7}")
    for p in panels:
        print(f"{'  ' + p.name:44} {p.axes:5} {p.full:6.2f} {p.skeleton:7.2f}")
    full, bare = sum(p.full for p in panels), sum(p.skeleton for p in panels)
    axes = sum(p.axes for p in panels)
    print(f"{'  total':44} {axes:5} {full:6.2f} {bare:7.2f}")
    imported = med[IMPORT_FLOOR][1] - med[NUMPY_FLOOR][1]
    need = bare + imported
    verdict = "within" if need <= 2.0 else "over"
    print(
        f"panels' floor: skeleton {bare:.2f} + matplotlib's import {imported:.2f} (import floor "
        f"- import numpy) = {need:.2f} CPU s, {verdict} the +2 s budget before any data is drawn"
    )


def drawn_table(drawn: list, small: dict, trials: int) -> None:
    """Each figure's build and drawing CPU in process, at both stores: the drawing is
    matplotlib's per figure, the build the part that reads the trials."""
    print(
        f"{'in process, after the inputs (CPU s):':44} {'build':>8} {'SVG':>6} {'PDF':>6}"
        f"   at {trials:,}: {'build':>5} {'SVG':>5}"
    )
    for d in drawn:
        other = small.get(d.name)
        there = f"{other.build:5.2f} {other.svg:5.2f}" if other else "  not drawn"
        print(f"{'  ' + d.name:44} {d.build:8.2f} {d.svg:6.2f} {d.pdf:6.2f} {'':>11}{there}")
    total = [sum(getattr(d, key) for d in drawn) for key in ("build", "svg", "pdf")]
    both = [sum(getattr(d, key) for d in small.values()) for key in ("build", "svg")]
    print(
        f"{'  total':44} {total[0]:8.2f} {total[1]:6.2f} {total[2]:6.2f} {'':>11}"
        f"{both[0]:5.2f} {both[1]:5.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument(
        "--small-trials",
        type=int,
        default=SMALLEST,
        metavar="N",
        help=f"the second store's trials (at least {SMALLEST:,}: 100 series of 5 runs)",
    )
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", help="directory to keep the stores in")
    parser.add_argument("--before", metavar="REV", help="also the report of this git revision")
    parser.add_argument("--patch-from", metavar="REV", help="report/hosts.py of this revision")
    parser.add_argument("--exports", help="the figures to export, comma-separated (default: all)")
    parser.add_argument(
        "--before-exports", action="store_true", help="with --before, its exports too"
    )
    args = parser.parse_args()
    if args.small_trials < SMALLEST:
        parser.error(f"--small-trials {args.small_trials}: make_store's KPI needs {SMALLEST:,}")
    root, store = store_in(args.keep, args.trials, "benchlang-figures-")
    scratch, env = None, None
    try:
        _small_root, small = store_in(
            str(root / f"small-{args.small_trials}"), args.small_trials, ""
        )
        if args.before:
            scratch = Path(tempfile.mkdtemp(prefix="benchlang-before-"))
            tree = revision_tree(args.before, args.patch_from, scratch)
            env = {**os.environ, "PYTHONPATH": str(tree)}
        measured(args, (root, store, small), env)
    finally:
        if scratch is not None:
            shutil.rmtree(scratch)
        if not args.keep:
            shutil.rmtree(root)
    return 0


def measured(args: argparse.Namespace, stores: tuple[Path, Path, Path], env: dict | None) -> None:
    """Every measure taken, then printed."""
    root, store, small = stores
    panels = panels_floor(store, args.repeat)
    figures = [p.name for p in panels]
    if args.exports:
        figures = [name for name in figures if name in args.exports.split(",")]
    cases = cases_of(args, stores, figures, env)
    load = os.getloadavg()[0]
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, (argv, environ) in cases.items():
            runs[name].append(command(argv, environ))
    drawn, drawn_small = in_process(store), {d.name: d for d in in_process(small)}
    med = {
        name: tuple(statistics.median(m[i] for m in times) for i in range(2))
        for name, times in runs.items()
    }
    print(
        f"{args.trials:,} trials, load average {load:.1f} at the start; medians of "
        f"{args.repeat} interleaved runs"
    )
    table(med, args, root)
    by_trials(med, args, root)
    floor_table(panels, med)
    drawn_table(drawn, drawn_small, args.small_trials)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    page = root / "report.html"
    print(
        f"report: {page.stat().st_size / 1024:.0f} KiB, {figures_shown(page)} figures; "
        "verdicts on CPU s"
    )


if __name__ == "__main__":
    raise SystemExit(main())
