"""Loading a spec: parse and check it once, against the installed backends; open its backend."""

from __future__ import annotations

from pathlib import Path

from benchlang import model
from benchlang.backends.base import Backend
from benchlang.backends.registry import backend_kinds
from benchlang.errors import SettingError, UserError
from benchlang.lang.check import Compiled, check_file


def load_spec(path: str | Path) -> Compiled:
    """The compiled spec with its warnings; raises ``SpecError`` listing every error.

    The backend catalogue is handed to the checker (lang must not import backends), so a
    ``hosts`` block is checked against what is installed.
    """
    return check_file(path, backends=backend_kinds())


def open_backend(experiment: model.Experiment, spec_path: str | Path) -> Backend:
    """The experiment's backend, configured from its ``hosts`` settings (paths relative to
    the spec's directory)."""
    kind = experiment.hosts.kind
    cls = backend_kinds().get(kind)
    if cls is None:
        raise UserError(f"no backend named '{kind}' is installed", "see 'benchlang plugins'")
    try:
        return cls.from_settings(experiment.hosts.settings, Path(spec_path).resolve().parent)
    except SettingError as err:
        raise UserError(f"hosts {kind}: {err.message}", err.hint) from None


def counts(experiment: model.Experiment) -> tuple[int, int]:
    """(configurations, planned trials) of an experiment, without building its plan."""
    from benchlang.design.counting import trial_count
    from benchlang.plan.configurations import configurations

    n_configs = len(configurations(experiment))
    return n_configs, trial_count(experiment.design, n_configs)
