"""Halting a run: a signal or a failed store write ends every host's task at once; a first
round whose trials all failed (failing fast) ends each after its current trial. Every command
goes through ``Halting.exec``, so none starts once the run halts.

A signal or a failed store write cancels every host task, and the backend's execute kills its
command's process group on cancellation (the HostSession contract, docs/plugins.md); with
``reap`` (benchlang run) every process descending from this one is also killed, so nothing is
left running even when a backend cannot be cancelled. A trial that was running is not stored
(its result would be the kill's): ``--resume`` runs it again."""

from __future__ import annotations

import asyncio

from benchlang.backends.base import Command, Execution, HostSession
from benchlang.run.executor.failures import FirstRoundFailed
from benchlang.run.executor.reaping import kill_descendants
from benchlang.run.executor.state import RunState
from benchlang.run.store import TrialRecord


class Halting:
    """The run-wide stop of the executor (a part of ``Executor`` over its ``RunState``)."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def interrupt(self, signum: int) -> None:
        """Stop the run because of a signal. Callable from a signal handler, more than once:
        each call kills again what is left and cancels again what is still cleaning up."""
        state = self.state
        if state.interrupted is None:
            state.interrupted = signum
        state.halting = True
        if state.reap:
            kill_descendants()
        if state.loop is not None and not state.loop.is_closed():
            state.loop.call_soon_threadsafe(self.cancel_all)

    def halt(self, error: BaseException) -> None:
        """A host task failed in a way that ends the whole run (the store cannot be written)."""
        state = self.state
        if state.error is None:
            state.error = error
        state.halting = True
        if state.reap:
            kill_descendants()
        self.cancel_all()

    def cancel_all(self) -> None:
        current = asyncio.current_task()
        for task in self.state.tasks:
            if task is not current and not task.done():
                task.cancel()

    def check(self) -> None:
        """Raise ``CancelledError`` once the run is halting."""
        if self.state.halting:
            raise asyncio.CancelledError

    async def exec(self, session: HostSession, command: Command) -> Execution:
        """Every command goes through here: none starts once the run is halting, and none
        that ended while it was halting counts."""
        self.check()
        execution = await session.execute(command)
        self.check()
        return execution

    def first_round_ended(
        self, r: int, host: str, ran: int, first_failure: TrialRecord | None
    ) -> bool:
        """Judge the first round this run ran trials of (``ran`` of them; ``first_failure``
        is its first failed trial when none succeeded, else None). True when the run stops
        there (``fail_fast``): the other hosts end after their current trial, run their
        teardown, and leave their rounds for ``--resume`` or ``--keep-going``."""
        state = self.state
        if not state.fail_fast or state.first_round_judged or not ran:
            return False
        state.first_round_judged = True
        if first_failure is None:
            return False
        state.first_round_failed = FirstRoundFailed(r, host, ran, first_failure)
        state.store.record_event(
            state.plan_hash,
            "failed_fast",
            f"all {ran} trials of the first round (round {r}) failed: the run stopped",
            host,
        )
        state.wake.set()
        return True
