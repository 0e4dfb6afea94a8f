"""Loading a spec: parse and check it once, against the installed backends; open its backend."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchlang import model
from benchlang.backends.base import Backend, Secret
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
    return open_backend_in(experiment, Path(spec_path).resolve().parent)


def open_backend_in(experiment: model.Experiment, spec_dir: Path) -> Backend:
    """The experiment's backend, its relative paths read from ``spec_dir``; no network and
    no allocation (``acquire`` does that)."""
    kind = experiment.hosts.kind
    cls = backend_kinds().get(kind)
    if cls is None:
        raise UserError(f"no backend named '{kind}' is installed", "see 'benchlang plugins'")
    settings = resolve_secrets(kind, experiment.hosts.settings, cls)
    try:
        return cls.from_settings(settings, spec_dir)
    except SettingError as err:
        raise UserError(f"hosts {kind}: {err.message}", err.hint) from None


def resolve_secrets(kind: str, settings: Mapping[str, Any], cls: Any) -> dict[str, Any]:
    """``key from env "NAME"`` settings read from the environment now: a ``Secret`` (masked
    in every repr) for the keys the backend marks secret, the plain text for the others."""
    secret = frozenset(getattr(cls, "secret_settings", ()))
    out = dict(settings)
    for key, value in settings.items():
        if not (isinstance(value, Mapping) and set(value) == {"env"}):
            continue
        name = value["env"]
        text = os.environ.get(name)
        if text is None:
            raise UserError(
                f"hosts {kind}: {key} is read from the environment variable {name}, which is not set",
                f"export {name}=... before running (the value is never stored)",
            )
        out[key] = Secret(name, text) if key in secret else text
    return out


def forget_secrets(experiment: model.Experiment) -> None:
    """Unset the environment variables the backend's secret settings were read from: trials
    inherit this process's environment, and a trial printing it would put the secret in the
    store. Called once the backend holds the values."""
    secret = frozenset(getattr(backend_kinds().get(experiment.hosts.kind), "secret_settings", ()))
    for key, value in experiment.hosts.settings.items():
        if key in secret and isinstance(value, Mapping) and set(value) == {"env"}:
            os.environ.pop(value["env"], None)


def counts(experiment: model.Experiment) -> tuple[int, int]:
    """(configurations, planned trials) of an experiment, without building its plan."""
    from benchlang.design.counting import trial_count
    from benchlang.plan.configurations import configurations

    n_configs = len(configurations(experiment))
    return n_configs, trial_count(experiment.design, n_configs)
