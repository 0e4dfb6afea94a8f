"""Halting a run: a signal, a failed store write or a first round that failed throughout ends
every host's task. Every command goes through ``_exec``, so none starts once the run halts.

A signal or a failed store write cancels every host task, and the backend's execute kills its
command's process group on cancellation (the HostSession contract, docs/plugins.md); with
``reap`` (benchlang run) every process descending from this one is also killed, so nothing is
left running even when a backend cannot be cancelled. A trial that was running is not stored
(its result would be the kill's): ``--resume`` runs it again."""

from __future__ import annotations

import asyncio

from benchlang.backends.base import Command, Execution, HostSession
from benchlang.run.executor.reaping import kill_descendants


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
