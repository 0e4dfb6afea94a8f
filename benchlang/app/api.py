"""The use cases behind the Python API (``import benchlang``, docs/api.md): a checked spec with
its plan, and a store's trials as a DataFrame, its KPIs, headline, comparisons and record:
the same app calls the CLI makes, returning the objects the CLI prints.

Every failure is a :class:`benchlang.errors.UserError` with the message the CLI prints; a
spec with errors raises its subclass :class:`SpecInvalid`, which carries the diagnostics.
"""

from __future__ import annotations

import html
import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from benchlang import model
from benchlang.errors import UserError
from benchlang.report.atomic import replacing

if TYPE_CHECKING:
    import pandas

    from benchlang.app.api_figures import Drawn
    from benchlang.app.figures import FigureSource
    from benchlang.lang.diagnostics import Diagnostic, Source
    from benchlang.plan.plan import Plan
    from benchlang.report.record import Record


class SpecInvalid(UserError):
    """A spec has errors: the message is ``benchlang check``'s output; ``diagnostics`` holds
    each one (message, span, hint)."""

    def __init__(self, message: str, diagnostics: tuple[Diagnostic, ...]) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


@attrs.frozen
class LoadedSpec:
    """A checked spec: the validated experiment, its plan (every trial, hashed, as ``benchlang
    plan`` builds it) and the checker's warnings."""

    experiment: model.Experiment
    plan: Plan
    diagnostics: tuple[Diagnostic, ...]
    source: Source


def load_spec(path: str | Path, seed: int | None = None) -> LoadedSpec:
    """Check and plan a spec as ``benchlang plan`` does; :class:`SpecInvalid` on errors."""
    from benchlang.app.plan import plan_experiment
    from benchlang.app.spec import load_spec as compile_spec
    from benchlang.lang.diagnostics import SpecError

    try:
        compiled = compile_spec(path)
    except SpecError as err:
        raise SpecInvalid(str(err), err.diagnostics) from None
    planned = plan_experiment(compiled.experiment, path, seed)
    return LoadedSpec(planned.experiment, planned.plan, compiled.warnings, compiled.source)


@attrs.frozen
class Shown:
    """An object the CLI prints (``value``), with the text the CLI prints for it and its HTML
    for Jupyter. Iterating, indexing and ``len`` reach the value when it is a list."""

    value: Any
    text: str
    html: str

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return self.html

    def __iter__(self) -> Iterator[Any]:
        return iter(self.value)

    def __len__(self) -> int:
        return len(self.value)

    def __getitem__(self, i: int) -> Any:
        return self.value[i]


def _captured(render: Callable[[io.StringIO], None]) -> str:
    out = io.StringIO()
    render(out)
    return out.getvalue()


def _pre(text: str) -> str:
    return f"<pre>{html.escape(text)}</pre>"


def _table(headers: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def open_store(path: str | Path, plan: str | None = None) -> BenchStore:
    """A store's plan (the latest unless ``plan`` names one) for analysis: ``.trials()`` as a
    DataFrame, ``.kpis()``, ``.headline()``, ``.compare(...)``, ``.record()``,
    ``.to_parquet(path)``, ``.figures()`` and ``.figure(name)``; a UserError (the CLI's message)
    when it is no store."""
    return BenchStore(path, plan)


class BenchStore:
    """A store opened for analysis: one plan (the latest unless ``plan`` names one). Each
    call reads the store afresh and closes it, as the CLI's commands do, except the figures:
    they share one reading and analysis of the store, made at the first ``figures()`` or
    ``figure(name)`` and kept (trials added later: ``open_store`` again; docs/api.md)."""

    def __init__(self, path: str | Path, plan: str | None = None) -> None:
        from benchlang.run.store import Store

        self.path = Path(path)
        with Store(self.path) as store:
            self.plan_hash = store.plan(plan).plan_hash
        self._figures: FigureSource | None = None

    def __repr__(self) -> str:
        return f"BenchStore({str(self.path)!r}, plan={self.plan_hash[:19]!r})"

    def trials(self, measured_only: bool = False) -> pandas.DataFrame:
        """One row per trial (every phase unless ``measured_only``): its factors' levels as
        columns, every measure, host, series, round, position, phase, timestamps, status."""
        return trials_frame(self.path, self.plan_hash, measured_only)

    def to_parquet(self, path: str | Path, measured_only: bool = False) -> Path:
        """Write :meth:`trials` to a Parquet file (needs pyarrow: ``benchlang[parquet]``)."""
        return write_parquet(self.trials(measured_only), path)

    def kpis(self) -> Shown:
        """TriScale's KPI of every configuration and series, as ``benchlang analyze`` shows
        them (a list of ``ConfigurationAnalysis``)."""
        from benchlang.app.analysis import kpis_and_headline, no_values
        from benchlang.app.stores import load_store
        from benchlang.report.analysis_text import render_analysis

        data = load_store(self.path, self.plan_hash, every_measure=False)
        if not data.experiment.kpis:
            raise UserError(
                "the spec declares no kpi", "add e.g.: kpi time { percentile 50 confidence 95% }"
            )
        kpis, _ = kpis_and_headline(data)
        if not kpis:
            raise UserError(no_values(data))
        units = {m.name: m.unit for m in data.experiment.metrics}
        text = _captured(lambda out: render_analysis(kpis, units, out))
        return Shown(kpis, text, _pre(text))

    def headline(self) -> Shown:
        """The headline ``benchlang run`` and ``analyze`` end with (``MetricHeadline`` per
        metric)."""
        from benchlang.app.analysis import kpis_and_headline, no_values
        from benchlang.app.stores import load_store
        from benchlang.report.headline import render_headline

        data = load_store(self.path, self.plan_hash, every_measure=False)
        if not data.experiment.kpis:
            raise UserError("the headline needs at least one kpi in the spec")
        _, headlines = kpis_and_headline(data)
        if not headlines:
            raise UserError(no_values(data))
        text = _captured(lambda out: render_headline(headlines, out))
        return Shown(headlines, text, _pre(text))

    def compare(
        self,
        metric: str | None = None,
        by: str | None = None,
        method: str | None = None,
        **settings: Any,
    ) -> Shown:
        """Comparisons as ``benchlang analyze`` runs them: the spec's ``compare`` items (those
        of ``metric`` / ``by`` when given), or, when the spec has none for them, ``compare
        METRIC by FACTOR with METHOD {settings}`` (bootstrap by default, Bakshy &
        Frachtenberg §3), the method's declared defaults filling what is not given. The spec's
        items are adjusted as the run's one family (``report.compare_family``), as ``analyze``
        adjusts them; an ad hoc comparison is one planned test, outside it."""
        from benchlang.app.stores import load_store
        from benchlang.report.compare import compare
        from benchlang.report.compare_text import render_comparisons
        from benchlang.stats.registry import statistics_methods

        data = load_store(self.path, self.plan_hash, every_measure=False)
        experiment = data.experiment
        chosen = [
            c
            for c in experiment.comparisons
            if metric in (None, c.metric)
            and by in (None, c.by)
            and method in (None, c.method)
            and not settings
        ]
        if not chosen:
            if metric is None or by is None:
                raise UserError(
                    "the spec has no such comparison; name the metric and the factor",
                    "store.compare('time', by='tool')",
                )
            chosen = [
                _comparison(
                    experiment, metric, by, method or "bootstrap", settings, statistics_methods()
                )
            ]
        if chosen[0] in experiment.comparisons:
            from benchlang.report.compare_family import compare_all

            every = compare_all(data)  # the spec's family, adjusted as analyze adjusts it
            results = [r for c, r in zip(experiment.comparisons, every, strict=True) if c in chosen]
        else:
            results = [compare(data, c) for c in chosen]  # one planned test: no family
        text = _captured(lambda out: render_comparisons(results, out))
        if chosen[0] not in experiment.comparisons and experiment.comparisons:
            text += (
                f"note: an ad hoc comparison at its own level, outside the run's family of the "
                f"spec's {len(experiment.comparisons)} compare item(s): not adjusted for them; "
                "chosen after seeing the data it is exploratory, not a planned test\n"
            )
        return Shown(results, text, _pre(text))

    def figures(self, metric: str | None = None) -> Shown:
        """Every figure of the papers (docs/figures.md), whether it applies to this store and
        why not, as ``benchlang figure STORE --list`` prints them (a list of ``Listed``)."""
        from benchlang.app.api_figures import listed_rows
        from benchlang.app.figures import listed_text

        listed = self._figure_source().listed(metric)
        html = _table(["figure", "applies", "draws / why not"], listed_rows(listed))
        return Shown(listed, listed_text(listed), html)

    def figure(self, name: str, *, style: str | None = None, metric: str | None = None) -> Drawn:
        """Figure ``name`` as ``benchlang figure STORE NAME`` draws it (``style`` "paper" or
        a .mplstyle file; ``metric`` as ``--metric``): shown inline in Jupyter, ``.data``,
        ``.frame()``, ``.save(path)``. A figure that does not apply raises the UserError
        saying why."""
        from benchlang.app.api_figures import drawn

        return drawn(self._figure_source(), name, style, metric)

    def _figure_source(self) -> FigureSource:
        """The store's inputs for figures, gathered at the first figure and kept: the store
        read, analysed and matplotlib imported once per session (docs/api.md)."""
        if self._figures is None:
            from benchlang.app.figures import FigureSource

            self._figures = FigureSource(self.path, self.plan_hash)
        return self._figures

    def record(self) -> Shown:
        """The 12-parameter reproducibility record (TriScale §4.4), as ``benchlang record``
        prints it (a ``Record``; ``.value.to_markdown()`` and ``.to_latex()`` for papers)."""
        from benchlang.app.analysis import record_of

        record: Record = record_of(self.path, self.plan_hash)
        headers, rows = record.grid()
        return Shown(record, record.to_markdown(), _table(headers, rows))


def _comparison(
    experiment: model.Experiment,
    metric: str,
    by: str,
    method: str,
    settings: dict[str, Any],
    methods: Any,
) -> model.Comparison:
    """An ad hoc comparison, checked as the spec's would be: known metric, factor, method and
    settings."""
    names = [m.name for m in experiment.metrics]
    if metric not in names:
        raise UserError(f"no metric named '{metric}'", f"metrics: {', '.join(names)}")
    factors = [f.name for f in experiment.factors]
    if by not in factors:
        raise UserError(f"no factor named '{by}'", f"factors: {', '.join(factors) or 'none'}")
    found = methods.get(method)
    if found is None or found.kind not in ("comparison", "factorial"):
        usable = sorted(m.name for m in methods.values() if m.kind == "comparison")
        raise UserError(f"no comparison method named '{method}'", f"methods: {', '.join(usable)}")
    unknown = sorted(set(settings) - {p.name for p in found.parameters})
    if unknown:
        raise UserError(
            f"{method} has no setting {', '.join(unknown)}",
            f"settings: {', '.join(p.name for p in found.parameters)}",
        )
    return model.Comparison(metric, by, method, {**found.defaults(), **settings})


def trials_frame(path: str | Path, plan_hash: str, measured_only: bool = False) -> pandas.DataFrame:
    """The trials of a stored plan as a DataFrame, column by column from the store's columnar
    reader (no row objects: a million trials stream in about the time ``read_sql`` of the bare
    table takes; benchmarks/bench_api.py)."""
    import pandas as pd

    from benchlang.report.data import experiment_of
    from benchlang.run.store import Store

    with Store(path) as store:
        stored = store.plan(plan_hash)
        table = store.trial_table(plan_hash)
        started, ended = _timestamps(store, plan_hash)
    experiment = experiment_of(stored)
    if measured_only:
        keep = table.measured
        table = table.select(keep)
        started, ended = started[keep], ended[keep]
    columns: dict[str, Any] = {
        "trial": table.trial,
        "benchmark": pd.Categorical(table.benchmark),
        "configuration": table.configuration,
        "label": pd.Categorical(table.label),
    }
    columns.update(_level_columns(table, experiment))
    columns.update(
        {
            "host": pd.Categorical(table.host),
            "series": table.series,
            "round": table.round,
            "position": table.position,
            "order": pd.Categorical(table.order_kind),
            "phase": pd.Categorical(table.phase),
            "status": pd.Categorical(
                np.where(table.ok, "ok", "failed"), categories=["ok", "failed"]
            ),
            "reason": table.reason,
            "started": pd.to_datetime(started, unit="s", utc=True).as_unit("ns"),
            "ended": pd.to_datetime(ended, unit="s", utc=True).as_unit("ns"),
        }
    )
    taken = set(columns)
    for name, values in table.measures.items():
        columns[name if name not in taken else f"measure_{name}"] = values
    return pd.DataFrame(columns, copy=False)


def _level_columns(table: Any, experiment: model.Experiment) -> dict[str, Any]:
    """One column per factor (and drawn level), typed as its levels are (text levels a
    categorical in plan order, numbers numeric): per configuration where the level is the
    configuration's, per trial for hidden factors' draws and replicate blocks."""
    import pandas as pd

    _, first, codes = np.unique(table.configuration, return_index=True, return_inverse=True)
    first = first.tolist()
    names = list(dict.fromkeys(k for i in first for k in table.levels[i]))
    drawn = set(experiment.drawn_levels)
    out: dict[str, Any] = {}
    for name in names:
        if name in drawn:
            values = [lv.get(name) for lv in table.levels]
            out[name] = pd.Series(np.array(values, dtype=object)).infer_objects().to_numpy()
            continue
        values = [table.levels[i].get(name) for i in first]
        if all(isinstance(v, str) for v in values):
            order = list(dict.fromkeys(values))
            where = np.array([order.index(v) for v in values], dtype=np.int64)
            out[name] = pd.Categorical.from_codes(where[codes], order)
        elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            out[name] = np.asarray(values)[codes]
        else:
            per_config = np.empty(len(first), dtype=object)
            per_config[:] = values
            out[name] = per_config[codes]
    return out


def _timestamps(store: Any, plan_hash: str) -> tuple[np.ndarray, np.ndarray]:
    """Start and end times (epoch seconds, nan when never set) in trial order, parsed by
    numpy from one ``group_concat`` each as the store's columnar reader does."""
    started, ended = store.db.execute(
        "SELECT group_concat(ifnull(started, 'nan')), group_concat(ifnull(ended, 'nan')) "
        "FROM (SELECT started, ended FROM trials WHERE plan_hash = ? ORDER BY trial)",
        (plan_hash,),
    ).fetchone()
    return tuple(
        np.fromstring(text, dtype=np.float64, sep=",") if text else np.empty(0)
        for text in (started, ended)
    )


def write_parquet(frame: pandas.DataFrame, path: str | Path) -> Path:
    """``frame`` as a Parquet file; a UserError naming the extra when pyarrow is missing."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise UserError(
            "Parquet needs pyarrow, which is not installed", "pip install 'benchlang[parquet]'"
        ) from None
    path = Path(path)
    try:
        with replacing(path) as handle:
            frame.to_parquet(handle, index=False)
    except OSError as err:
        raise UserError(f"cannot write {path}: {err.strerror or err}") from None
    return path


def export_parquet(store: str | Path, plan: str | None, output: str | Path) -> Path:
    """``results --format parquet``: a plan's trials (:func:`trials_frame`) as a Parquet file."""
    opened = BenchStore(store, plan)
    return opened.to_parquet(output)
