"""The runner's short paths between trials (docs/measures.md#cost): a round's
row as stored when its reset fails, levels stored as their own JSON (1, True, 1.0; -0.0), and the
local session's report awaited in its own thread when it is the only session open."""

from __future__ import annotations

import asyncio
import io
import json
import sqlite3

import numpy as np

from benchlang.backends.base import Command
from benchlang.backends.local import DIRECT_WAIT, LocalSession
from benchlang.run.progress import Progress
from benchlang.run.store import Store
from benchlang.testing.scripted import HostScript
from tests.test_executor_failures import BASIC, execute
from tests.test_store_run import record


def test_a_round_whose_reset_failed_stores_its_permutation_as_a_list_of_configurations(
    tmp_path,
):
    body = BASIC.replace("seed 3", 'seed 3\n  reset "drop-caches"')
    ran = execute(tmp_path, body, {"h0": HostScript(fail_on="drop-caches")})
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        permutation, reset = db.execute(
            "SELECT permutation, reset_status FROM rounds WHERE round = 0"
        ).fetchone()
    expected = ran.plan.trial_configuration[ran.trials_of_round(0)].tolist()
    assert reset == "failed" and json.loads(permutation) == expected


def test_levels_equal_as_keys_but_not_as_json_are_stored_each_as_given(tmp_path):
    """Each trial's levels are stored as their own JSON, never as another equal value's (1,
    True, 1.0; 0.0 and -0.0; equal tuples of other texts; numpy scalars)."""
    given = [{"x": 1}, {"x": True}, {"x": 1.0}, {"x": 1}, {"b": [1, 2], "a": "s"}, {}]
    given += [{"x": 0.0}, {"x": -0.0}, {"x": float("nan")}, {"x": None}]
    given += [{"x": (1, 2)}, {"x": (1.0, 2.0)}, {"x": (True, 2)}, {"x": (0.0,)}, {"x": (-0.0,)}]
    given += [{"x": np.float64(0.0)}, {"x": np.float64(-0.0)}, {"x": ("a", ("b", 1))}]
    given += [{"x": ("a", ("b", 1.0))}, {"x": 2}, {"x": 2.0}]
    with Store(tmp_path / "s.sqlite", create=True) as store:
        store.add_plan("sha256:p", "e", "sha256:s", 0, "{}")
        for t, levels in enumerate(given):
            store.record_trial("sha256:p", record(t, levels=levels))
    with sqlite3.connect(tmp_path / "s.sqlite") as db:
        stored = [text for (text,) in db.execute("SELECT levels FROM trials ORDER BY trial")]
    assert stored == [json.dumps(levels, sort_keys=True) for levels in given]
    assert stored[:3] == ['{"x": 1}', '{"x": true}', '{"x": 1.0}']
    assert stored[10:12] == ['{"x": [1, 2]}', '{"x": [1.0, 2.0]}']
    assert stored[15:17] == ['{"x": 0.0}', '{"x": -0.0}']


def test_one_session_waits_in_its_thread_and_a_longer_trial_stays_cancellable(tmp_path):
    async def run() -> tuple:
        session = LocalSession(spec_dir=tmp_path)
        try:
            quick = await session.execute(Command("true"))
            said = await session.execute(Command("/bin/sh -c 'sleep 0.05; echo late'"))
            cancelled = False
            try:  # past DIRECT_WAIT the report is awaited on the loop, which can cancel it
                await asyncio.wait_for(session.execute(Command("sleep 30")), 0.5)
            except TimeoutError:
                cancelled = True
            after = await session.execute(Command("echo next"))
        finally:
            await session.close()
        return quick, said, cancelled, after

    quick, said, cancelled, after = asyncio.run(run())
    assert quick.ok and quick.rusage["wall_time"] > 0
    assert said.ok and said.stdout == b"late\n" and said.rusage["wall_time"] >= 0.05 > DIRECT_WAIT
    assert cancelled
    assert after.ok and after.stdout == b"next\n"


def test_sessions_side_by_side_both_answer_on_the_loop(tmp_path):
    async def run() -> list:
        sessions = [LocalSession(f"local:{i}", tmp_path) for i in range(2)]
        try:
            return await asyncio.gather(
                *(
                    s.execute(Command(f"/bin/sh -c 'sleep 0.05; echo {i}'"))
                    for i, s in enumerate(sessions)
                )
            )
        finally:
            for s in sessions:
                await s.close()

    first, second = asyncio.run(run())
    assert (first.stdout, second.stdout) == (b"0\n", b"1\n")
    # Side by side, not one after the other: each started before the other ended.
    assert first.started < second.ended and second.started < first.ended


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_shows_every_trial_counted_when_the_run_ends():
    progress = Progress(500, stream=_Terminal())
    try:
        for t in range(500):
            progress.advance(failed=t % 100 == 0)
        task = progress._bar.tasks[0]
        assert (progress.done, progress.failed) == (500, 5)
        assert (task.completed, task.fields["failed"]) == (500, 5)
    finally:
        progress.close()
