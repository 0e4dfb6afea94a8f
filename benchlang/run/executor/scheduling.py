"""Scheduling rounds onto hosts: one task per host runs its rounds in plan order; a stopped
host's rounds go to the healthy hosts of its group (``Plan.host_groups``) or are left for
``--resume``; a round runs only when the lease leaves it time to finish."""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Sequence

import numpy as np

from benchlang.backends.base import HostDown, HostSession
from benchlang.run.executor.failures import HostStopped


class Scheduling:
    """Host tasks, their queues of rounds and reassignment (a mixin of ``Executor``)."""

    async def _run_rounds(self) -> None:
        self.run_started = self.store.mark_run_started(self.plan_hash)
        hosts = self.plan.hosts
        rounds_by_host = {
            h: np.flatnonzero(self.plan.round_host == i).tolist() for i, h in enumerate(hosts)
        }
        self._busy = set(hosts)
        self._tasks = [
            asyncio.ensure_future(self._guarded(host, rounds_by_host[host])) for host in hosts
        ]
        if self._halting:  # interrupted before the tasks existed
            self._cancel_all()
        await asyncio.gather(*self._tasks)

    async def _host(self, host: str, rounds: list[int]) -> None:
        queue = self._pending_rounds(rounds)
        queue.reverse()
        session: HostSession | None = None
        current: int | None = None
        try:
            while self.first_round_failed is None:
                current = queue.pop() if queue else await self._adopt(host)
                if current is None:
                    break
                if not await self._lease_allows(host, current, queue):
                    current = None
                    break
                if session is None:
                    session = await self._open(host)
                if self._deadline():
                    n, began = len(self._unfinished(current)), time.monotonic()
                    await self._round(session, current)
                    if n:
                        self._per_trial = max(self._per_trial, (time.monotonic() - began) / n)
                else:
                    await self._round(session, current)
                current = None
        except (HostStopped, HostDown) as err:
            self._host_down(
                host, err.message, ([current] if current is not None else []) + queue[::-1]
            )
        except OSError as err:
            self._host_down(
                host,
                f"{type(err).__name__}: {err}",
                ([current] if current is not None else []) + queue[::-1],
            )
        finally:
            self._busy.discard(host)
            self._wake.set()
            if session is not None:
                await self._close(session)

    async def _adopt(self, host: str) -> int | None:
        """This host's own rounds are done: take a round a stopped host of its group left (plan
        order), or return None once no host of its group that could still stop is running."""
        self._busy.discard(host)
        self._wake.set()
        group = self.groups[host]
        orphans = self._orphans[group]
        while True:
            if orphans:
                self._busy.add(host)
                return heapq.heappop(orphans)
            if not self._busy.intersection(group):
                return None
            self._wake.clear()
            await self._wake.wait()

    def _host_down(self, host: str, message: str, rounds: Sequence[int] = ()) -> None:
        if self._halting:  # the run is stopping: nothing is reassigned, the host is not at fault
            return
        self.hosts_down.append((host, message))
        self.store.record_event(self.plan_hash, "host_down", message, host)
        self.progress.note(f"host {host} stopped: {message}")
        rounds = self._pending_rounds(rounds)
        if not rounds:
            return
        n_trials = sum(len(self._unfinished(r)) for r in rounds)
        group = self.groups[host]
        if len(group) == 1:
            text = f"{len(rounds)} rounds ({n_trials} trials) pinned to {host} left unrun: continue with --resume once it is back"
            self.store.record_event(self.plan_hash, "unrun", text, host)
            self.progress.note(text)
            return
        for r in rounds:
            heapq.heappush(self._orphans[group], r)
        down = {h for h, _ in self.hosts_down}
        healthy = [h for h in group if h not in down]
        nobody = (
            "no healthy host remains"
            if len(group) == len(self.plan.hosts)
            else f"no equal host of {', '.join(group)} remains: continue with --resume once one is back"
        )
        text = (
            f"{len(rounds)} rounds ({n_trials} trials) of {host} reassigned to {', '.join(healthy)}"
            if healthy
            else f"{len(rounds)} rounds ({n_trials} trials) of {host} left unrun: {nobody}"
        )
        self.store.record_event(self.plan_hash, "reassigned" if healthy else "unrun", text, host)
        self.progress.note(text)
        self._wake.set()

    def _deadline(self) -> bool:
        """Whether the lease ends at a time (rounds are then timed, to know what fits)."""
        lease = self.leases.lease
        return lease is not None and lease.expires is not None

    async def _lease_allows(self, host: str, r: int, queue: list[int]) -> bool:
        """Whether round ``r`` can finish before the lease ends (extending it when the backend
        can); if not, this host's rounds are left for ``--resume`` under a new lease."""
        if not self._deadline():
            return True  # no deadline: skip counting every queued round (quadratic in rounds)
        n = len(self._unfinished(r))
        needed = self._per_trial * n
        more = self._per_trial * sum(len(self._unfinished(q)) for q in queue)
        reason = await self.leases.time_left(needed, more)
        if reason is None:
            return True
        rounds = self._pending_rounds([r, *queue[::-1]])
        text = f"{len(rounds)} rounds of {host} left unrun: {reason}; continue with --resume"
        self.store.record_event(self.plan_hash, "unrun", text, host)
        self.progress.note(text)
        return False

    def _pending_rounds(self, rounds: list[int]) -> list[int]:
        return [r for r in rounds if self._unfinished(r)]

    def _unfinished(self, r: int) -> list[int]:
        bounds = self.plan.round_bounds
        todo = [t for t in range(int(bounds[r]), int(bounds[r + 1])) if t not in self.finished]
        if self.stopping.active:
            todo = [t for t in todo if not self._skipped(t)]
        return todo
