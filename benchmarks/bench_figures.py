"""The papers' figures at 100,000 trials (issue 36): what they add to `benchlang report`, and
the time to export one with `benchlang figure` (targets: at most 2 s more than the report
without them; an export under 1 s).

The store is bench_store_scale's (a 10-configuration spec, 100 series, a KPI and a variability
score). Commands run as a user runs them (a new process each: start-up, the store read and
analysed, the drawing), interleaved, ``--repeat`` times; medians of wall and CPU seconds (the
children's user + system time: steadier than wall time on a shared machine).

The baseline, named in the table: `benchlang report --no-figures`, today's page without its
figures section (the same analyses, tables and the plots no figure draws). With ``--before
REV`` also the report of a git revision before the figures (extracted with ``git archive``
into a temporary directory and run from there; e.g. ``ba910a3``, the commit before the figures
landed, with ``--patch-from 347ecd0`` for the report/hosts.py its analysis imports but its tree
lacked; with ``--before-exports`` its exports too, for a before/after table of a pass). Then each applicable figure exported as PDF by the command line, beside two floors:
the interpreter importing numpy and matplotlib, and matplotlib writing a PDF of one line with
axis labels in TrueType fonts (its PDF backend, fontTools and a font subset), which every
export pays; each export's CPU over the second floor is printed. Last, in process, the time to
build each figure's numbers and to draw it (so a slow figure is named).

    python benchmarks/bench_figures.py [--trials 100000] [--repeat 3] [--keep DIR]
        [--before REV [--patch-from REV] [--before-exports]] [--exports NAME,NAME]
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


def in_process(store: Path) -> list[tuple[str, float, float, float]]:
    """(figure, CPU seconds to build its numbers, to draw it as SVG (the report's), as PDF) of
    every applicable one, in the report's order, after the inputs are gathered once (what
    figures share, ``report.figures.shared``, is counted in the first that builds it);
    matplotlib and its SVG and PDF backends imported before (counted in the commands)."""
    import matplotlib.figure  # noqa: F401

    from benchlang.app.report import report_inputs
    from benchlang.report.figures import NotApplicable, labels, registry
    from benchlang.report.figures.render import Palette, draw

    inputs = report_inputs(store, with_headline=False)
    palette = Palette(labels(inputs))
    for kind in registry().values():  # the backends' imports, once, by the first that applies
        try:
            data = kind.build(inputs, None)
        except NotApplicable:
            continue
        for fmt in ("svg", "pdf"):
            draw(data, kind.draw, palette, fmt)
        break
    inputs = report_inputs(store, with_headline=False)  # nothing built yet, as in a report
    inputs.kpis, inputs.order  # noqa: B018 (computed once, as the report does)
    out = []
    for name, kind in registry().items():
        start = time.process_time()
        try:
            data = kind.build(inputs, None)
        except NotApplicable:
            continue
        built = time.process_time()
        draw(data, kind.draw, palette, "svg")
        svg = time.process_time()
        draw(data, kind.draw, palette, "pdf")
        out.append((name, built - start, svg - built, time.process_time() - svg))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", help="directory to keep the store in")
    parser.add_argument("--before", metavar="REV", help="also the report of this git revision")
    parser.add_argument("--patch-from", metavar="REV", help="report/hosts.py of this revision")
    parser.add_argument("--exports", help="the figures to export, comma-separated (default: all)")
    parser.add_argument(
        "--before-exports", action="store_true", help="with --before, its exports too"
    )
    args = parser.parse_args()
    root, store = store_in(args.keep, args.trials, "benchlang-figures-")
    page = root / "report.html"
    benchlang = [sys.executable, "-m", "benchlang"]
    cases: dict[str, tuple[list[str], dict | None]] = {
        "baseline: report --no-figures": (
            [*benchlang, "report", str(store), "-o", str(page), "--no-figures"],
            None,
        ),
        "report (every figure)": ([*benchlang, "report", str(store), "-o", str(page)], None),
    }
    scratch = None
    if args.before:
        scratch = Path(tempfile.mkdtemp(prefix="benchlang-before-"))
        tree = revision_tree(args.before, args.patch_from, scratch)
        env = {**os.environ, "PYTHONPATH": str(tree)}
        cases[f"report at {args.before}"] = (
            [*benchlang, "report", str(store), "-o", str(root / "before.html")],
            env,
        )
    cases["floor: import numpy, matplotlib.figure"] = (
        [sys.executable, "-c", "import numpy, matplotlib.figure"],
        None,
    )
    cases[PDF_FLOOR] = ([sys.executable, "-c", ONE_LINE_PDF], None)
    figures = [name for name, *_times in in_process(store)]
    if args.exports:
        figures = [name for name in figures if name in args.exports.split(",")]
    for name in figures:
        out = root / f"{name}.pdf"
        cases[f"figure {name} -o .pdf"] = (
            [*benchlang, "figure", str(store), name, "-o", str(out)],
            None,
        )
        if args.before and args.before_exports:
            cases[f"figure {name} at {args.before}"] = (
                [*benchlang, "figure", str(store), name, "-o", str(root / f"before-{name}.pdf")],
                env,
            )
    load = os.getloadavg()[0]
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    for _ in range(args.repeat):
        for name, (argv, env) in cases.items():
            runs[name].append(command(argv, env))
    drawn = in_process(store)
    med = {
        name: tuple(statistics.median(m[i] for m in measured) for i in range(2))
        for name, measured in runs.items()
    }
    base = med["baseline: report --no-figures"]
    print(
        f"{args.trials:,} trials, load average {load:.1f} at the start; medians of "
        f"{args.repeat} interleaved runs"
    )
    floor = med[PDF_FLOOR][1]
    print(f"{'command':44} {'seconds':>8} {'CPU s':>6} {'CPU over':>16}")
    for name, (wall, cpu) in med.items():
        verdict, extra = "", " " * 16
        if name.startswith(("report", "baseline")):
            extra = f"{cpu - base[1]:+7.2f} baseline"
        elif name.startswith("figure "):
            extra = f"{cpu - floor:+7.2f} PDF floor"
        if name == "report (every figure)":
            verdict = "  ok" if cpu - base[1] <= 2.0 else "  misses +2 s"
        elif name.startswith("figure "):
            verdict = "  ok" if cpu <= 1.0 else "  misses 1 s"
        print(f"{name:44} {wall:8.2f} {cpu:6.2f} {extra}{verdict}")
    print(f"{'in process, after the inputs:':44} {'build':>8} {'SVG':>6} {'PDF':>6}  (CPU s)")
    for name, build, svg, pdf in drawn:
        print(f"{'  ' + name:44} {build:8.2f} {svg:6.2f} {pdf:6.2f}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    shown = page.read_text(encoding="utf-8").count("<figure class='plot' id=\"fig-")
    print(f"report: {page.stat().st_size / 1024:.0f} KiB, {shown} figures; verdicts on CPU s")
    if scratch is not None:
        shutil.rmtree(scratch)
    if not args.keep:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
