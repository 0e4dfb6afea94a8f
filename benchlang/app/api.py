"""The use cases behind the Python API (``import benchlang``, docs/api.md): a checked spec with
its plan, and a store's trials as a DataFrame, its KPIs, headline, comparisons and record:
the same app calls the CLI makes, returning the objects the CLI prints.

Every failure is a :class:`benchlang.errors.UserError` with the message the CLI prints; a
spec with errors raises its subclass :class:`SpecInvalid`, which carries the diagnostics.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from benchlang import model
from benchlang.app import api_frames
from benchlang.app.api_trials import trials_frame
from benchlang.app.api_trials import write_parquet as write_parquet  # re-exported (tests, users)
from benchlang.errors import UserError

if TYPE_CHECKING:
    import pandas

    from benchlang.app.api_figures import Drawn
    from benchlang.app.figures import FigureSource
    from benchlang.lang.diagnostics import Diagnostic, Source
    from benchlang.plan.plan import Plan
    from benchlang.report.record import Record


def hinted(call: Callable[..., Any]) -> Callable[..., Any]:
    """A UserError raised by ``call`` says its hint in its text (``str(err)``, what a notebook
    and a traceback show after ``UserError:``) as the CLI prints it, on a line of its own;
    ``err.message`` and ``err.hint`` are unchanged."""
    import functools

    @functools.wraps(call)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return call(*args, **kwargs)
        except UserError as err:
            if err.hint and err.args == (err.message,):
                err.args = (f"{err.message}\nhint: {err.hint}",)
            raise

    return wrapper


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


@hinted
def load_spec(path: str | Path, seed: int | None = None) -> LoadedSpec:
    """Check and plan a spec as ``benchlang plan`` does; :class:`SpecInvalid` on errors."""
    from benchlang.app.plan import plan_experiment
    from benchlang.app.spec import compile_spec
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
    tables for Jupyter; ``to_frame()`` a tidy, typed DataFrame of it (``app.api_frames``).
    Iterating, indexing and ``len`` reach the value when it is a list."""

    value: Any
    text: str
    html: str
    frame: Callable[[], pandas.DataFrame] | None = None

    def __str__(self) -> str:
        return self.text

    @hinted
    def to_frame(self) -> pandas.DataFrame:
        """One row per observation, typed (docs/api.md#frames); a UserError where this
        result has no frame (``record()``: ``.value.grid()``)."""
        if self.frame is None:
            raise UserError("this result has no frame", "record().value.grid() for the record")
        return self.frame()

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


@hinted
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

    @hinted
    def trials(self, measured_only: bool = False) -> pandas.DataFrame:
        """One row per trial (every phase unless ``measured_only``): its factors' levels as
        columns, every measure, host, series, round, position, phase, timestamps, status."""
        return trials_frame(self.path, self.plan_hash, measured_only)

    @hinted
    def to_parquet(self, path: str | Path, measured_only: bool = False) -> Path:
        """Write the trials to a Parquet file in the columns of every trial export (CSV, JSON,
        ``results --format parquet``; docs/exports.md); needs pyarrow: ``benchlang[parquet]``."""
        from benchlang.app.stores import load_store
        from benchlang.report.export_files import write_trials_parquet

        data = load_store(self.path, self.plan_hash, all_phases=not measured_only)
        return Path(write_trials_parquet(data, path))

    @hinted
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
        return Shown(
            kpis,
            text,
            api_frames.kpis_html(kpis, units),
            lambda: api_frames.kpis_frame(kpis, units),
        )

    @hinted
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
        return Shown(
            headlines,
            text,
            api_frames.headline_html(headlines),
            lambda: api_frames.headline_frame(headlines),
        )

    @hinted
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
        items are adjusted as the run's one family (``app.comparisons``), as ``analyze``
        adjusts them; an ad hoc comparison is one planned test, outside it."""
        from benchlang.app.stores import load_store
        from benchlang.report.compare_text import render_comparisons
        from benchlang.report.comparison_data import compare
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
            from benchlang.app.comparisons import compare_all

            every = compare_all(data)  # the spec's family, adjusted as analyze adjusts it
            results = [r for c, r in zip(experiment.comparisons, every, strict=True) if c in chosen]
        else:
            results = [compare(data, c) for c in chosen]  # one planned test: no family
        text = _captured(lambda out: render_comparisons(results, out))
        planned = chosen[0] in experiment.comparisons
        note = "" if planned else _exploratory(len(experiment.comparisons))
        text += f"note: {note}\n" if note else ""
        return Shown(
            results,
            text,
            api_frames.compare_html(results, planned, note),
            lambda: api_frames.compare_frame(results, planned),
        )

    @hinted
    def figures(self, metric: str | None = None) -> Shown:
        """Every figure of the papers (docs/figures.md), whether it applies to this store and
        why not, as ``benchlang figure STORE --list`` prints them (a list of ``Listed``)."""
        from benchlang.app.api_figures import listed_rows
        from benchlang.app.figures import listed_text

        listed = self._figure_source().listed(metric)
        html = api_frames.html_table(["figure", "applies", "draws / why not"], listed_rows(listed))
        return Shown(listed, listed_text(listed), html)

    @hinted
    def figure(
        self,
        name: str,
        *,
        style: str | None = None,
        metric: str | None = None,
        labels: dict[str, str] | None = None,
        notes: str = "below",
    ) -> Drawn:
        """Figure ``name`` as ``benchlang figure STORE NAME`` draws it (``style`` "paper" or
        a .mplstyle file; ``metric`` as ``--metric``; ``labels`` {CONFIG: TEXT} as
        ``--label``; ``notes`` "below" or "none" as ``--notes``): shown inline in Jupyter,
        ``.data``, ``.frame()``, ``.save(path)``. A figure that does not apply raises the
        UserError saying why."""
        from benchlang.app.api_figures import drawn

        source = self._figure_source()
        if labels or notes != "below":
            source = source.named(labels, notes)
        return drawn(source, name, style, metric)

    def _figure_source(self) -> FigureSource:
        """The store's inputs for figures, gathered at the first figure and kept: the store
        read, analysed and matplotlib imported once per session (docs/api.md)."""
        if self._figures is None:
            from benchlang.app.figures import FigureSource

            self._figures = FigureSource(self.path, self.plan_hash)
        return self._figures

    @hinted
    def record(self) -> Shown:
        """The 12-parameter reproducibility record (TriScale §4.4), as ``benchlang record``
        prints it (a ``Record``; ``.value.to_markdown()`` and ``.to_latex()`` for papers)."""
        from benchlang.app.analysis import record_of

        record: Record = record_of(self.path, self.plan_hash)
        headers, rows = record.grid()
        return Shown(record, record.to_markdown(), api_frames.html_table(headers, rows))


def _exploratory(items: int) -> str:
    """What an ad hoc comparison is, whether or not the spec has ``compare`` items."""
    outside = (
        f", outside the run's family of the spec's {items} compare item(s): not adjusted for them"
        if items
        else ", not one the spec planned (it has no compare item)"
    )
    return (
        f"an ad hoc comparison at its own level{outside}; chosen after seeing the data it is "
        "exploratory, not a planned test"
    )


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


def export_parquet(store: str | Path, plan: str | None, output: str | Path) -> Path:
    """``results --format parquet``: a plan's trials as a Parquet file, in the columns of the
    CSV and JSON exports (``report.trial_columns``; docs/exports.md)."""
    from benchlang.app.stores import load_store
    from benchlang.report.export_files import write_trials_parquet

    return Path(write_trials_parquet(load_store(store, plan), output))
