"""An executor over a store as ``benchlang run`` prepares one (the plan registered first), with
a quiet progress bar: what the executor's tests run directly, without the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchlang.run.executor import Executor
from benchlang.run.progress import Progress


def quiet_executor(
    experiment: Any,
    plan: Any,
    backend: Any,
    store: Any,
    spec: Path | None = None,
    **options: Any,
) -> Executor:
    """``plan`` added to ``store`` (with ``spec``'s path and text when given) and an Executor of
    it; ``options`` are the Executor's own (``backoff``, ``spec_dir``, ...)."""
    where = (str(spec), spec.read_text()) if spec is not None else ()
    store.add_plan(
        plan.hash, experiment.name, experiment.spec_hash, plan.seed, plan.json_text(), *where
    )
    return Executor(
        experiment, plan, backend, store, Progress(plan.n_trials, quiet=True), **options
    )
