"""The bind barrier: a gang's bind calls wait here until every guaranteed member has arrived.

kube-scheduler binds each pod in its own goroutine, so bind calls for one gang arrive concurrently and in any
order. Each call ``arrive``s and awaits; the call that completes the gang (per group: members bound already +
members waiting ≥ ``minReplicas``) takes every waiter and runs the release, which binds them all and answers each
waiter with its own outcome. A waiter that is not taken within the time-out leaves, answers ``Error`` and binds
nothing, so kube-scheduler retries it and no gang is ever left half-bound by us.

Lives on the event loop: every method runs on the loop's thread, so taking waiters needs no lock, and a time-out
and a release can never both claim the same waiter. The time-out is awaited through an injected ``Timer``
(``asyncio.sleep`` in production) so tests decide when it fires instead of racing the machine's load.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

__all__ = ["Arrival", "BarrierTimeout", "BindBarrier", "Timer"]

log = logging.getLogger(__name__)


@dataclass
class Arrival:
    """One bind call waiting for its gang."""

    pod: str
    uid: str
    node: str
    group: str
    arrived_at: float
    outcome: asyncio.Future[str] = field(repr=False)  # "" when bound, else the error text
    taken: bool = False


class BarrierTimeout(Exception):
    def __init__(self, waiting: dict[str, int]) -> None:
        super().__init__("bind barrier timed out")
        self.waiting = waiting  # group → members that had arrived when this one gave up


Release = Callable[[list[Arrival]], Awaitable[None]]
"""Binds the taken arrivals and sets each one's ``outcome``; must set every outcome, even on failure."""

Satisfied = Callable[[dict[str, int]], bool]
"""Given arrivals per group, whether the gang's guarantee is met (the coordinator adds members bound already)."""


Timer = Callable[[float], Awaitable[None]]
"""Completes once the given seconds have passed (``asyncio.sleep``); may be cancelled when a release answers first."""


class BindBarrier:
    def __init__(self, *, timer: Timer = asyncio.sleep) -> None:
        self._timer = timer
        self._waiting: dict[str, list[Arrival]] = {}
        # Releases run as their own tasks: a bind call cancelled by its client must not stop a gang's bindings
        # half-way. Held here so the loop does not drop them before they finish.
        self._releases: set[asyncio.Task[None]] = set()

    def waiting(self, gang: str) -> list[Arrival]:
        return list(self._waiting.get(gang, ()))

    def arrived_per_group(self, gang: str) -> dict[str, int]:
        counts: dict[str, int] = {}
        for arrival in self._waiting.get(gang, ()):
            counts[arrival.group] = counts.get(arrival.group, 0) + 1
        return counts

    def gangs(self) -> list[str]:
        return list(self._waiting)

    async def wait(
        self,
        gang: str,
        arrival: Arrival,
        *,
        satisfied: Satisfied,
        release: Release,
        timeout: float,
    ) -> str:
        """Join the gang's barrier; returns the outcome ("" = bound) or raises ``BarrierTimeout``."""
        queue = self._waiting.setdefault(gang, [])
        # A retried bind for the same pod replaces its stale arrival rather than counting twice.
        for stale in [a for a in queue if a.pod == arrival.pod]:
            queue.remove(stale)
            stale.taken = True
            if not stale.outcome.done():
                stale.outcome.set_result(f"superseded by a newer bind call for {stale.pod}")
        queue.append(arrival)
        if satisfied(self.arrived_per_group(gang)):
            task = asyncio.ensure_future(_run_release(release, self._take(gang)))
            self._releases.add(task)
            task.add_done_callback(self._releases.discard)
            return await asyncio.shield(arrival.outcome)
        expiry = asyncio.ensure_future(self._timer(timeout))
        try:
            # ``asyncio.wait`` never cancels the outcome: a bind call cancelled by its client leaves it to the release.
            await asyncio.wait((arrival.outcome, expiry), return_when=asyncio.FIRST_COMPLETED)
        finally:
            expiry.cancel()
        if arrival.outcome.done() or arrival.taken:
            # Answered, or taken by a release while the timer fired: the release answers, we wait for it.
            return await arrival.outcome
        waiting = self.arrived_per_group(gang)
        self._leave(gang, arrival)
        raise BarrierTimeout(waiting)

    def cancel_gang(self, gang: str, reason: str) -> int:
        """Answer every waiter of ``gang`` with ``reason`` (the gang or its plan went away)."""
        taken = self._take(gang)
        for arrival in taken:
            if not arrival.outcome.done():
                arrival.outcome.set_result(reason)
        return len(taken)

    def _take(self, gang: str) -> list[Arrival]:
        taken = self._waiting.pop(gang, [])
        for arrival in taken:
            arrival.taken = True
        return taken

    def _leave(self, gang: str, arrival: Arrival) -> None:
        queue = self._waiting.get(gang)
        if queue and arrival in queue:
            queue.remove(arrival)
            if not queue:
                del self._waiting[gang]


async def _run_release(release: Release, taken: list[Arrival]) -> None:
    try:
        await release(taken)
    except Exception as err:
        # A release that fails must still answer everyone it took, or their bind calls would hang.
        for arrival in taken:
            if not arrival.outcome.done():
                arrival.outcome.set_result(f"binding the gang failed: {type(err).__name__}: {err}")
        log.exception("gang release failed pods=%s", [arrival.pod for arrival in taken])
