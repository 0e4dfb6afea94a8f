"""Halting a run: a signal or a failed store write ends every host's task at once; a first
round whose trials all failed (failing fast) ends each after its current trial. Every command
goes through ``_exec``, so none starts once the run halts.

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
from benchlang.run.store import TrialRecord


class Halting:
    """The run-wide stop of the executor (a mixin of ``Executor``)."""

    def interrupt(self, signum: int) -> None:
        """Stop the run because of a signal. Callable from a signal handler, more than once:
        each call kills again what is left and cancels again what is still cleaning up."""
        if self.interrupted is None:
            self.interrupted = signum
        self._halting = True
        if self.reap:
            kill_descendants()
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._cancel_all)

    def _halt(self, error: BaseException) -> None:
        """A host task failed in a way that ends the whole run (the store cannot be written)."""
        if self._error is None:
            self._error = error
        self._halting = True
        if self.reap:
            kill_descendants()
        self._cancel_all()

    def _cancel_all(self) -> None:
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current and not task.done():
                task.cancel()

    def _check_halt(self) -> None:
        if self._halting:
            raise asyncio.CancelledError

    async def _guarded(self, host: str, rounds: list[int]) -> None:
        try:
            await self._host(host, rounds)
        except asyncio.CancelledError:
            if not self._halting:
                raise
        except Exception as err:
            self._halt(err)

    async def _exec(self, session: HostSession, command: Command) -> Execution:
        """Every command goes through here: none starts once the run is halting, and none
        that ended while it was halting counts."""
        self._check_halt()
        execution = await session.execute(command)
        self._check_halt()
        return execution

    def _first_round_ended(
        self, r: int, host: str, ran: int, first_failure: TrialRecord | None
    ) -> bool:
        """Judge the first round this run ran trials of (``ran`` of them; ``first_failure``
        is its first failed trial when none succeeded, else None). True when the run stops
        there (``fail_fast``): the other hosts end after their current trial, run their
        teardown, and leave their rounds for ``--resume`` or ``--keep-going``."""
        if not self.fail_fast or self._first_round_judged or not ran:
            return False
        self._first_round_judged = True
        if first_failure is None:
            return False
        self.first_round_failed = FirstRoundFailed(r, host, ran, first_failure)
        self.store.record_event(
            self.plan_hash,
            "failed_fast",
            f"all {ran} trials of the first round (round {r}) failed: the run stopped",
            host,
        )
        self._wake.set()
        return True
