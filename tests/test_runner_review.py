"""A review of the runner's short paths between trials: one host's task still
gives the event loop turns when every trial ends without suspending, and the bar draws the
counts an update left out while the next trial runs."""

from __future__ import annotations

import asyncio
import gc
import sqlite3

import benchlang.backends.local as local
import benchlang.run.progress as progress
from benchlang.backends.local import LocalBackend
from benchlang.lang.check import load
from benchlang.plan.compile import compile_plan
from benchlang.run.store import Store
from tests.executors import quiet_executor
from tests.test_runner_paths import _Terminal

SPEC = """benchlang 1
experiment quick {
  seed 1
  factor c in ["true", "/bin/true"]
  benchmark b { run "{c}" }
  design { runs 300 series 1 }
}
"""


def test_a_one_host_run_is_cancelled_between_trials_that_never_suspend(tmp_path, monkeypatch):
    # Every report is awaited in the session's thread, however loaded the machine: the trials
    # of one host never suspend, and only the executor's own turns let the loop cancel it.
    monkeypatch.setattr(local, "DIRECT_WAIT", 60.0)
    gc.collect()  # sessions other tests left unclosed would make this one not alone
    (tmp_path / "t.bench").write_text(SPEC)
    experiment = load(tmp_path / "t.bench")
    backend = LocalBackend(tmp_path)
    plan = compile_plan(experiment, backend.hosts())
    with Store(tmp_path / "r.sqlite", create=True) as store:
        executor = quiet_executor(experiment, plan, backend, store, spec_dir=str(tmp_path))

        async def main() -> str:
            run = asyncio.ensure_future(executor.run())
            while len(executor.finished) < 3 and not run.done():
                await asyncio.sleep(0.001)
            run.cancel()
            try:
                await run
            except asyncio.CancelledError:
                return "cancelled"
            return "ran to the end"

        how = asyncio.run(main())
    with sqlite3.connect(tmp_path / "r.sqlite") as db:
        stored = [t for (t,) in db.execute("SELECT trial FROM trials ORDER BY trial")]
    assert how == "cancelled"
    assert 3 <= len(stored) < plan.n_trials
    assert stored == list(range(len(stored))), "one host's trials, committed in plan order"


def test_the_bar_draws_a_failure_it_left_out_while_the_next_trial_runs(monkeypatch):
    monkeypatch.setattr(progress, "DRAW_INTERVAL", 0.2)

    async def main() -> tuple:
        bar = progress.Progress(10, stream=_Terminal())
        try:
            bar.advance(failed=False)
            bar._next_line = float("inf")  # the next count falls within DRAW_INTERVAL
            bar.advance(failed=True)
            left_out = bar._bar.tasks[0]
            shown_at_once = (left_out.completed, left_out.fields["failed"])
            # A long next trial awaited on the loop: its timer ends after the bar's.
            await asyncio.sleep(0.4)
            task = bar._bar.tasks[0]
            return shown_at_once, (task.completed, task.fields["failed"])
        finally:
            bar.close()

    at_once, during_the_next_trial = asyncio.run(main())
    assert at_once == (1, 0), "the update was left out (throttled)"
    assert during_the_next_trial == (2, 1)
