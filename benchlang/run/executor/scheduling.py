"""Scheduling rounds onto hosts: one task per host runs its rounds in plan order; a stopped
host's rounds go to the healthy hosts of its group (``Plan.host_groups``) or are left for
``--resume``; a round runs only when the lease leaves it time to finish."""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Sequence

import attrs
import numpy as np

from benchlang.backends.base import HostDown, HostSession
from benchlang.run.executor.failures import HostStopped
from benchlang.run.executor.halting import Halting
from benchlang.run.executor.hooks import Hooks
from benchlang.run.executor.rounds import RoundRunner
from benchlang.run.executor.state import RunState
from benchlang.run.executor.stopping_rule import StopRule


@attrs.define(eq=False)
class Scheduler:
    """Host tasks, their queues of rounds and reassignment (a part of ``Executor`` over its
    ``RunState``)."""

    state: RunState
    rounds: RoundRunner
    hooks: Hooks
    stop_rule: StopRule
    halting: Halting

    async def run(self) -> None:
        """One task per host, each running its rounds in plan order."""
        self.state.run_started = self.state.store.mark_run_started(self.state.plan_hash)
        hosts = self.state.plan.hosts
        rounds_by_host = {
            h: np.flatnonzero(self.state.plan.round_host == i).tolist() for i, h in enumerate(hosts)
        }
        self.state.busy = set(hosts)
        self.state.tasks = [
            asyncio.ensure_future(self.guarded(host, rounds_by_host[host])) for host in hosts
        ]
        if self.state.halting:  # interrupted before the tasks existed
            self.halting.cancel_all()
        await asyncio.gather(*self.state.tasks)

    async def host_task(self, host: str, rounds: list[int]) -> None:
        queue = self.stop_rule.pending(rounds)
        queue.reverse()
        session: HostSession | None = None
        current: int | None = None
        try:
            while self.state.first_round_failed is None:
                current = queue.pop() if queue else await self.adopt(host)
                if current is None:
                    break
                if not await self.lease_allows(host, current, queue):
                    current = None
                    break
                if session is None:
                    session = await self.hooks.open(host)
                if self.deadline():
                    n, began = len(self.stop_rule.unfinished(current)), time.monotonic()
                    await self.rounds.run(session, current)
                    if n:
                        self.state.per_trial = max(
                            self.state.per_trial, (time.monotonic() - began) / n
                        )
                else:
                    await self.rounds.run(session, current)
                current = None
        except (HostStopped, HostDown) as err:
            self.host_down(
                host, err.message, ([current] if current is not None else []) + queue[::-1]
            )
        except OSError as err:
            self.host_down(
                host,
                f"{type(err).__name__}: {err}",
                ([current] if current is not None else []) + queue[::-1],
            )
        finally:
            self.state.busy.discard(host)
            self.state.wake.set()
            if session is not None:
                await self.hooks.close(session)

    async def adopt(self, host: str) -> int | None:
        """This host's own rounds are done: take a round a stopped host of its group left (plan
        order), or return None once no host of its group that could still stop is running."""
        self.state.busy.discard(host)
        self.state.wake.set()
        group = self.state.groups[host]
        orphans = self.state.orphans[group]
        while True:
            if orphans:
                self.state.busy.add(host)
                return heapq.heappop(orphans)
            if not self.state.busy.intersection(group):
                return None
            self.state.wake.clear()
            await self.state.wake.wait()

    def host_down(self, host: str, message: str, rounds: Sequence[int] = ()) -> None:
        if (
            self.state.halting
        ):  # the run is stopping: nothing is reassigned, the host is not at fault
            return
        self.state.hosts_down.append((host, message))
        self.state.store.record_event(self.state.plan_hash, "host_down", message, host)
        self.state.progress.note(f"host {host} stopped: {message}")
        rounds = self.stop_rule.pending(rounds)
        if not rounds:
            return
        n_trials = sum(len(self.stop_rule.unfinished(r)) for r in rounds)
        group = self.state.groups[host]
        if len(group) == 1:
            text = f"{len(rounds)} rounds ({n_trials} trials) pinned to {host} left unrun: continue with --resume once it is back"
            self.state.store.record_event(self.state.plan_hash, "unrun", text, host)
            self.state.progress.note(text)
            return
        for r in rounds:
            heapq.heappush(self.state.orphans[group], r)
        down = {h for h, _ in self.state.hosts_down}
        healthy = [h for h in group if h not in down]
        nobody = (
            "no healthy host remains"
            if len(group) == len(self.state.plan.hosts)
            else f"no equal host of {', '.join(group)} remains: continue with --resume once one is back"
        )
        text = (
            f"{len(rounds)} rounds ({n_trials} trials) of {host} reassigned to {', '.join(healthy)}"
            if healthy
            else f"{len(rounds)} rounds ({n_trials} trials) of {host} left unrun: {nobody}"
        )
        self.state.store.record_event(
            self.state.plan_hash, "reassigned" if healthy else "unrun", text, host
        )
        self.state.progress.note(text)
        self.state.wake.set()

    def deadline(self) -> bool:
        """Whether the lease ends at a time (rounds are then timed, to know what fits)."""
        lease = self.state.leases.lease
        return lease is not None and lease.expires is not None

    async def lease_allows(self, host: str, r: int, queue: list[int]) -> bool:
        """Whether round ``r`` can finish before the lease ends (extending it when the backend
        can); if not, this host's rounds are left for ``--resume`` under a new lease."""
        if not self.deadline():
            return True  # no deadline: skip counting every queued round (quadratic in rounds)
        n = len(self.stop_rule.unfinished(r))
        needed = self.state.per_trial * n
        more = self.state.per_trial * sum(len(self.stop_rule.unfinished(q)) for q in queue)
        reason = await self.state.leases.time_left(needed, more)
        if reason is None:
            return True
        rounds = self.stop_rule.pending([r, *queue[::-1]])
        text = f"{len(rounds)} rounds of {host} left unrun: {reason}; continue with --resume"
        self.state.store.record_event(self.state.plan_hash, "unrun", text, host)
        self.state.progress.note(text)
        return False

    async def guarded(self, host: str, rounds: list[int]) -> None:
        """A host's task: a halt's cancellation ends it quietly; any other error halts the
        run (the store cannot be written)."""
        try:
            await self.host_task(host, rounds)
        except asyncio.CancelledError:
            if not self.state.halting:
                raise
        except Exception as err:
            self.halting.halt(err)
