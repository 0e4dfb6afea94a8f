"""Reading a store: plans, a plan's trials as columns (from the columnar blocks and the rows
above their watermarks, in one snapshot), stops, events and host facts."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterator, Sequence

import numpy as np

from benchlang.errors import UserError
from benchlang.run import measure_blocks, trial_blocks
from benchlang.run import row_keys as keys
from benchlang.run.store.records import StoredPlan, TrialTable, plan_text
from benchlang.run.store.state import StoreState


class StoreReading(StoreState):
    """The reading methods of ``Store`` (mixed in; ``Store`` opens the connection)."""

    def has_plan(self, plan_hash: str) -> bool:
        """Whether a run of this plan was ever started in this store."""
        row = self.connection.execute(
            "SELECT 1 FROM plans WHERE plan_hash = ?", (plan_hash,)
        ).fetchone()
        return row is not None

    def plans(self) -> list[StoredPlan]:
        rows = self.connection.execute(
            "SELECT plan_hash, experiment, spec_hash, spec_path, spec_text, seed, plan_json, run_started FROM plans ORDER BY created"
        ).fetchall()
        return [
            StoredPlan(
                plan_hash=row[0],
                experiment=row[1],
                spec_hash=row[2],
                spec_path=row[3],
                spec_text=row[4],
                seed=row[5],
                plan_json=plan_text(row[6]),
                run_started=row[7],
            )
            for row in rows
        ]

    def plan(self, plan_hash: str | None = None) -> StoredPlan:
        """The named plan, or the only/latest one when none is named."""
        plans = self.plans()
        if not plans:
            raise UserError(f"{self.path} holds no experiment yet")
        if plan_hash is None:
            return plans[-1]
        for p in plans:
            if p.plan_hash.removeprefix("sha256:").startswith(plan_hash.removeprefix("sha256:")):
                return p
        raise UserError(
            f"{self.path} holds no plan {plan_hash}",
            f"plans here: {', '.join(p.plan_hash[:19] for p in plans)}; if the spec or its seed changed since the run, omit SPEC (latest plan) or pass --plan",
        )

    def _plan_id(self, plan_hash: str) -> int:
        """The plan's integer key (schema 6); -1, which no row carries, for an unknown plan."""
        found = keys.plan_id(self.connection, plan_hash)
        return -1 if found is None else found

    def finished_trials(self, plan_hash: str) -> set[int]:
        return {
            row[0]
            for row in self.connection.execute(
                "SELECT trial FROM trial_rows WHERE plan = ?", (self._plan_id(plan_hash),)
            )
        }

    def count_failed(self, plan_hash: str) -> int:
        """How many trials of the plan failed (every phase)."""
        return int(
            self.connection.execute(
                "SELECT count(*) FROM trial_rows WHERE plan = ? AND status = 'failed'",
                (self._plan_id(plan_hash),),
            ).fetchone()[0]
        )

    def stops(self, plan_hash: str) -> list[tuple[int, int, int, str, str, str | None, str]]:
        """(series, configuration, after_trials, action, rule, detected_class, reason) per stop."""
        return self.connection.execute(
            "SELECT series, configuration, after_trials, action, rule, detected_class, reason FROM stops WHERE plan_hash = ? ORDER BY series, configuration",
            (plan_hash,),
        ).fetchall()

    def events(self, plan_hash: str) -> list[tuple[float, str | None, str, str]]:
        return self.connection.execute(
            "SELECT at, host, kind, message FROM events WHERE plan_hash = ? ORDER BY at",
            (plan_hash,),
        ).fetchall()

    def host_facts(self, plan_hash: str) -> dict[str, dict[str, str]]:
        rows = self.connection.execute(
            "SELECT host, facts FROM hosts WHERE plan_hash = ?", (plan_hash,)
        )
        return {host: json.loads(facts) for host, facts in rows}

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction around several queries, so that they see one state of a
        store another process may be writing (WAL)."""
        if self.connection.in_transaction:
            yield
            return
        self.connection.execute("BEGIN")
        try:
            yield
        finally:
            self.connection.execute("COMMIT")

    def trial_table(self, plan_hash: str, measures: Collection[str] | None = None) -> TrialTable:
        """A plan's trials column by column, in trial order; every measure, or only those
        named in ``measures`` (each then a column, all nan where no trial has it); read in
        one snapshot of the store."""
        with self._snapshot():
            return self._trial_table(plan_hash, measures)

    def _trial_table(self, plan_hash: str, measures: Collection[str] | None) -> TrialTable:
        """``trial_table`` from the trial and measure blocks and the rows no block holds yet;
        reasons through a partial index."""
        numbers, codes, dictionary = trial_blocks.merge(
            trial_blocks.read_parts(self.connection, plan_hash)
        )
        texts = tuple(np.asarray(dictionary[c], dtype=object)[codes[c]] for c in range(4))
        return self._decoded(plan_hash, measures, numbers, texts, (dictionary[4], codes[4]))

    def _decoded(
        self,
        plan_hash: str,
        measures: Collection[str] | None,
        numbers: np.ndarray,
        texts: Sequence[np.ndarray],
        configurations: tuple[Sequence[Sequence], np.ndarray],
    ) -> TrialTable:
        """A trial table from its integer columns (rows of ``numbers``: trial, series, round,
        position, configuration), its text columns (host, order, status, phase) and each trial's index
        into the distinct (configuration, label, benchmark, levels JSON) tuples."""
        trial, series, round_, position, configuration = numbers
        host, order_kind, status, phase = texts
        configs, which = configurations
        level_dicts = np.empty(len(configs), dtype=object)
        level_dicts[:] = [json.loads(c[3]) for c in configs]
        return TrialTable(
            trial=trial,
            series=series,
            round=round_,
            position=position,
            host=host,
            configuration=configuration,
            label=np.asarray([c[1] for c in configs], dtype=object)[which],
            benchmark=np.asarray([c[2] for c in configs], dtype=object)[which],
            levels=tuple(level_dicts[which].tolist()),
            order_kind=order_kind,
            ok=status == "ok",
            reason=self._reasons(plan_hash, trial),
            measures=self._measure_columns(plan_hash, trial, measures),
            phase=phase,
        )

    def _reasons(self, plan_hash: str, trial: np.ndarray) -> np.ndarray:
        reason = np.full(trial.size, None, dtype=object)
        for t, text in self.connection.execute(
            "SELECT trial, reason FROM trial_rows WHERE plan = ? AND reason IS NOT NULL",
            (self._plan_id(plan_hash),),
        ):
            reason[np.searchsorted(trial, t)] = text
        return reason

    def _measure_columns(
        self, plan_hash: str, trial: np.ndarray, wanted: Collection[str] | None = None
    ) -> dict[str, np.ndarray]:
        """Each measure (or each ``wanted`` one) as a float column aligned with ``trial`` (nan
        where a trial has none), from the measure blocks. Values travel as floats, never as
        text (SQLite's text form of a REAL does not round-trip), so that they stay exact."""
        return measure_blocks.read_columns(self.connection, plan_hash, trial, wanted)

    def _measure_rows(
        self, plan_hash: str, trial: np.ndarray, wanted: Collection[str] | None = None
    ) -> dict[str, np.ndarray]:
        """``_measure_columns`` from the ``measures`` view's rows alone (the reference form)."""
        if wanted is None:
            names = sorted(
                r[0]
                for r in self.connection.execute(
                    "SELECT DISTINCT name FROM measures WHERE plan_hash = ?", (plan_hash,)
                )
            )
        else:
            names = sorted(set(wanted))
        if not names or trial.size == 0:
            return {name: np.full(trial.size, np.nan) for name in names}
        code = "CASE name" + "".join(f" WHEN ? THEN {i}" for i in range(len(names))) + " END"
        chosen = "" if wanted is None else f" AND name IN ({', '.join('?' * len(names))})"
        rows = self.connection.execute(
            f"SELECT trial, {code}, value FROM measures "
            f"WHERE plan_hash = ? AND value IS NOT NULL{chosen}",
            (*names, plan_hash, *(() if wanted is None else names)),
        )
        found = np.fromiter(
            rows, dtype=[("trial", np.int64), ("name", np.int64), ("value", np.float64)]
        )
        at = np.searchsorted(trial, found["trial"])
        known = (at < trial.size) & (trial[np.minimum(at, trial.size - 1)] == found["trial"])
        columns = np.full((len(names), trial.size), np.nan)
        columns[found["name"][known], at[known]] = found["value"][known]
        return dict(zip(names, columns, strict=True))

    def _trial_table_by_rows(
        self, plan_hash: str, measures: Collection[str] | None = None
    ) -> TrialTable:
        """The same table read a row at a time through the ``trials`` view (the reference
        form of the columnar read)."""
        rows = self.connection.execute(
            "SELECT trial, series, round, position, host, configuration, label, benchmark, "
            "levels, order_kind, status, reason, phase FROM trials WHERE plan_hash = ? "
            "ORDER BY trial",
            (plan_hash,),
        ).fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [()] * 13
        trial = np.asarray(columns[0], dtype=np.int64)
        return TrialTable(
            trial=trial,
            series=np.asarray(columns[1], dtype=np.int64),
            round=np.asarray(columns[2], dtype=np.int64),
            position=np.asarray(columns[3], dtype=np.int64),
            host=np.asarray(columns[4], dtype=object),
            configuration=np.asarray(columns[5], dtype=np.int64),
            label=np.asarray(columns[6], dtype=object),
            benchmark=np.asarray(columns[7], dtype=object),
            levels=tuple(json.loads(x) for x in columns[8]),
            order_kind=np.asarray(columns[9], dtype=object),
            ok=np.asarray([s == "ok" for s in columns[10]], dtype=bool),
            reason=np.asarray(columns[11], dtype=object),
            measures=self._measure_columns(plan_hash, trial, measures),
            phase=np.asarray(columns[12], dtype=object),
        )

    def series_values(self, plan_hash: str, name: str) -> dict[int, np.ndarray]:
        rows = self.connection.execute(
            "SELECT trial, data FROM series_values WHERE plan_hash = ? AND name = ?",
            (plan_hash, name),
        )
        return {t: np.frombuffer(data, dtype="<f8") for t, data in rows}

    def failed_trials(
        self, plan_hash: str
    ) -> Iterator[tuple[int, str, str, int | None, bytes, bytes]]:
        yield from self.connection.execute(
            "SELECT t.trial, k.label, t.reason, t.exit_status, "
            "CASE WHEN o.trial IS NULL THEN X'' ELSE o.stdout_tail END, "
            "CASE WHEN o.trial IS NULL THEN X'' ELSE o.stderr_tail END "
            "FROM trial_rows t JOIN kinds k ON k.id = t.kind "
            "LEFT JOIN trial_outputs o ON o.plan = t.plan AND o.trial = t.trial "
            "WHERE t.plan = ? AND t.status = 'failed' ORDER BY t.trial",
            (self._plan_id(plan_hash),),
        )
