"""The statistics registry: every method installed in the ``benchlang.statistics`` entry-point
group, benchlang's built-ins included (registered in its own pyproject like a third party's).

Lazy like the backend catalogue: listing names reads only the cached entry-point scan; a
method's declaration is imported when its name is used, its implementation when results are
computed (:meth:`benchlang.stats.contract.Method.load`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping

from benchlang import model
from benchlang.entrypoints import Point, declared_in
from benchlang.stats.contract import Method

GROUP = "benchlang.statistics"


class MethodCatalogue(Mapping[str, Method]):
    """Method name -> declaration, loading an entry point on first use of its name. A plugin
    that fails to load, or names something that is not a :class:`Method`, is absent
    (``benchlang plugins`` shows why). ``register`` adds one directly (tests, embedding)."""

    def __init__(self, points: tuple[Point, ...]) -> None:
        self._points = {ep.name: ep for ep in points}
        self._loaded: dict[str, Method] = {}
        self._broken: set[str] = set()

    def __getitem__(self, name: str) -> Method:
        if name not in self._loaded:
            if name in self._broken:
                raise KeyError(name)
            point = self._points[name]
            try:
                method = point.load()
            except Exception as err:  # a broken plugin must not break every spec
                self._broken.add(name)
                raise KeyError(name) from err
            if not isinstance(method, Method) or method.name != name:
                self._broken.add(name)
                raise KeyError(name)
            self._loaded[name] = method
        return self._loaded[name]

    def register(self, method: Method) -> None:
        self._loaded[method.name] = method
        self._broken.discard(method.name)

    def __iter__(self) -> Iterator[str]:
        return iter(sorted({*self._points, *self._loaded} - self._broken))

    def __len__(self) -> int:
        return len(list(iter(self)))

    def of_kind(self, *kinds: str) -> list[str]:
        """Names of the installed methods of these kinds (loads each declaration: cheap)."""
        out = []
        for name in list(self):
            try:
                if self[name].kind in kinds:
                    out.append(name)
            except KeyError:
                continue
        return out

    def distribution(self, name: str) -> tuple[str, str]:
        """(package, version) that provides a method; benchlang's for one registered directly."""
        point = self._points.get(name)
        dist = point.dist if point is not None else None
        if dist is not None:
            return dist.name, dist.version
        from benchlang import __version__

        return "benchlang", __version__


@functools.cache
def statistics_methods() -> MethodCatalogue:
    """The installed statistics methods, by name."""
    return MethodCatalogue(declared_in(GROUP))


def kpi_method_text(k: model.Kpi) -> str:
    """The KPI's method with its settings beyond percentile, confidence and bound, as a spec
    writes them ("kpi_bootstrap { interval bca replicates 2000 }"; "thompson" alone): what
    ``analyze``, ``--json`` and the record say computed a KPI."""
    if not k.options:
        return k.method
    return f"{k.method} {{ {' '.join(f'{name} {_setting(v)}' for name, v in k.options)} }}"


def _setting(value: object) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def methods_used(experiment: model.Experiment) -> tuple[str, ...]:
    """Every statistics method the experiment's analysis uses, as ``name (package version)``,
    for the reproducibility record (a result names the code that computed it); a KPI method
    given settings carries them (``kpi_method_text``)."""
    names: list[str] = []
    names.extend(k.method for k in experiment.kpis)
    settings = {k.method: kpi_method_text(k) for k in experiment.kpis if k.options}
    if experiment.variabilities:
        names.append("variability")
    names.extend(c.method for c in experiment.comparisons)
    if experiment.stop is not None:
        names.append(experiment.stop.kind)
    if experiment.order_dependence:
        names.append("order_dependence")
    catalogue = statistics_methods()
    out = []
    for name in dict.fromkeys(names):
        if name not in catalogue:
            out.append(f"{name} (not installed)")
            continue
        package, version = catalogue.distribution(name)
        out.append(f"{settings.get(name, name)} ({package} {version})")
    return tuple(out)
