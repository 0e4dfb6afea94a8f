"""A store's trials as a pandas DataFrame and as Parquet (``BenchStore.trials``,
``to_parquet``, ``results --format parquet``; docs/api.md), column by column from the store's
columnar reader."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from benchlang import model
from benchlang.errors import UserError
from benchlang.report.atomic import replacing

if TYPE_CHECKING:
    import pandas


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
    for name, values in _level_columns(table, experiment).items():
        columns[name if name not in columns else f"factor_{name}"] = values
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
    starts, ends = (
        np.fromstring(text, dtype=np.float64, sep=",") if text else np.empty(0)
        for text in (started, ended)
    )
    return starts, ends


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
