"""Helpers shared by commands: loading a spec, opening a backend, printing diagnostics."""

from __future__ import annotations

import sys
from pathlib import Path

from benchlang import model
from benchlang.backends.base import Backend, SettingError
from benchlang.backends.registry import backend_kinds
from benchlang.errors import UserError
from benchlang.lang.check import load
from benchlang.lang.diagnostics import SpecError, render


class SpecFailed(Exception):
    """The spec had errors, already printed; exit with status 2."""


def load_spec(path: str) -> model.Experiment:
    """Compile a spec or print every diagnostic and raise SpecFailed."""
    try:
        return load(path)
    except SpecError as err:
        print(str(err), file=sys.stderr)
        raise SpecFailed from None


def open_backend(experiment: model.Experiment, spec_path: str) -> Backend:
    kind = experiment.hosts.kind
    cls = backend_kinds().get(kind)
    if cls is None:
        raise UserError(f"no backend named '{kind}' is installed", "see 'benchlang plugins'")
    try:
        return cls.from_settings(experiment.hosts.settings, Path(spec_path).resolve().parent)
    except SettingError as err:
        raise UserError(f"hosts {kind}: {err.message}", err.hint) from None


def print_warnings(path: str) -> None:
    from benchlang.lang.check import warnings_of
    from benchlang.lang.syntax import decode

    source = decode(path, Path(path).read_bytes())
    for diagnostic in warnings_of(source, Path(path).parent):
        print(render(source, diagnostic), file=sys.stderr)
