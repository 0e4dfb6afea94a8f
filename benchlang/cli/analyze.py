"""``benchlang analyze``: TriScale's KPIs, variability scores and independence tests over a
store (or a CSV from elsewhere)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

from benchlang import model
from benchlang.cli import add_command
from benchlang.cli.common import load_spec
from benchlang.cli.profile import profile_spec_item
from benchlang.csvrows import read_rows
from benchlang.errors import UserError
from benchlang.report.analysis import analyze, analyze_values, render_analysis
from benchlang.report.compare import compare, render_comparisons
from benchlang.report.data import load_data
from benchlang.report.order_analysis import order_report, render_order_report
from benchlang.report.warmup import render_warmup_advice, warmup_advice
from benchlang.run.store import Store


def configure(p: argparse.ArgumentParser) -> None:
    """The arguments of ``benchlang analyze``; the lazy table in benchlang.cli calls this."""
    p.description = "Analyse a store with the spec's KPIs and variability scores (TriScale, Jacob et al. JSys 2021), or a CSV of values from elsewhere with --data."
    p.add_argument(
        "spec",
        nargs="?",
        metavar="SPEC",
        help="the spec whose plan to analyse (default: the latest plan in the store)",
    )
    p.add_argument("--store", help="SQLite results file")
    p.add_argument("--plan", help="plan hash to analyse")
    p.add_argument("--data", help="CSV file: one column per metric, optional series column")
    p.add_argument(
        "--kpi",
        default="percentile 50 confidence 95%",
        help="with --data: e.g. 'percentile 50 confidence 95%%'",
    )
    p.add_argument("--variability", help="with --data: e.g. 'percentile 25 confidence 75%%'")
    p.add_argument("--series", help="with --data: the column that names each value's series")
    p.add_argument(
        "--better",
        choices=("lower", "higher"),
        default="lower",
        help="with --data: which direction is better (sets the KPI bound)",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def _settings(text: str, what: str) -> dict[str, float]:
    pairs = dict(re.findall(r"(percentile|confidence|exclude)\s+([0-9.]+)%?", text))
    if "percentile" not in pairs or "confidence" not in pairs:
        raise UserError(f"--{what} needs 'percentile P confidence C%', got {text!r}")
    values = {k: float(v) for k, v in pairs.items()}
    for key in ("percentile", "confidence"):
        if not 0 < values[key] < 100:
            raise UserError(f"--{what}: {key} {values[key]:g} is outside (0, 100)")
    return values


def _from_csv(args: argparse.Namespace) -> list:
    path = Path(args.data)
    rows = read_rows(path)
    k = _settings(args.kpi, "kpi")
    v = _settings(args.variability, "variability") if args.variability else None
    series = None
    if args.series:
        if args.series not in rows[0]:
            raise UserError(f"{path} has no column {args.series!r}")
        _, series = np.unique([r[args.series] for r in rows], return_inverse=True)
    results = []
    for column in rows[0]:
        if column == args.series:
            continue
        try:
            values = np.array([float(r[column]) if r[column] != "" else np.nan for r in rows])
        except ValueError:
            continue
        bound = "upper" if args.better == "lower" else "lower"
        kpi = model.Kpi(column, k["percentile"], k["confidence"], bound, int(k.get("exclude", 0)))
        var = model.Variability(column, v["percentile"], v["confidence"]) if v else None
        results.append(analyze_values(values, series, column, kpi, var))
    if not results:
        raise UserError(f"{path} has no numeric column")
    return results


def run(args: argparse.Namespace) -> int:
    if args.data:
        results, units = _from_csv(args), {}
    else:
        if not args.store:
            raise UserError("give --store PATH (or --data FILE.csv)")
        plan_hash = args.plan
        if args.spec and not plan_hash:
            from benchlang.cli.plan import build_plan

            load_spec(args.spec)
            plan_hash = build_plan(args.spec)[2].hash
        with Store(args.store) as store:
            data = load_data(store, plan_hash)
            every_phase = (
                load_data(store, plan_hash, all_phases=True)
                if data.experiment.design.layout
                else None
            )
        experiment = data.experiment
        if not (
            experiment.kpis
            or experiment.order_dependence
            or experiment.comparisons
            or experiment.profiles
            or every_phase
        ):
            raise UserError(
                "the spec declares no kpi and no order_dependence analysis",
                "add e.g.: kpi time { percentile 50 confidence 95% }",
            )
        results = analyze(data)
        comparisons = [compare(data, c) for c in experiment.comparisons]
        warmup = warmup_advice(every_phase) if every_phase is not None else []
        if args.json:
            print(
                json.dumps(
                    {
                        "kpis": [r.to_dict() for r in results],
                        "comparisons": [c.to_dict() for c in comparisons],
                        "warmup": [w.to_dict() for w in warmup],
                    },
                    indent=2,
                    default=_json_default,
                )
            )
            return 0
        for item in experiment.profiles:
            profile_spec_item(item)
        if comparisons:
            render_comparisons(comparisons)
        if warmup:
            render_warmup_advice(warmup)
        if experiment.order_dependence is not None:
            render_order_report(order_report(data, None, experiment.order_dependence["alpha"]))
        units = {m.name: m.unit for m in experiment.metrics}
    if args.json:
        print(
            json.dumps(
                {"kpis": [r.to_dict() for r in results], "comparisons": [], "warmup": []},
                indent=2,
                default=_json_default,
            )
        )
    elif results or not args.store:
        render_analysis(results, units)
    return 0


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``benchlang analyze`` on a parser of one's own (tests, tools)."""
    add_command(subparsers, "analyze")
