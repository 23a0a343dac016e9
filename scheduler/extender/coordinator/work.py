"""Work for the background worker, queued by whoever notices it (store events, state changes, the release).

An insertion-ordered set: the same work queued twice runs once, and arrival order is planning order.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from typing import Literal

from scheduler.extender.coordinator.members import GangRef

__all__ = ["Kind", "Work", "WorkQueue"]

Kind = Literal["plan", "running", "report", "nominate", "preempt", "evict"]
Work = tuple[Kind, GangRef]
"""plan: plan the gang ahead of kube-scheduler's filter; running: its pods may all run now (PodGang phase);
report: its state changed in a way the PodGang's status shows (Scheduled, PartiallyBound); nominate: its plan
changed, so its pods' nominatedNodeName may have to follow; preempt: it was refused for room, and lower-priority
work may make way for it; evict: a preemption decided for it has victims to evict."""


class WorkQueue:
    def __init__(self) -> None:
        self._pending: dict[Work, None] = {}
        self._lock = threading.Lock()
        # Who waits, for which kinds (None: any): a put wakes only a taker that wants it, not every thread.
        self._takers: list[tuple[Collection[Kind] | None, threading.Condition]] = []

    def put(self, work: Work) -> None:
        with self._lock:
            self._pending[work] = None
            for kinds, wake in self._takers:
                if kinds is None or work[0] in kinds:
                    wake.notify()

    def take(self, timeout: float, kinds: Collection[Kind] | None = None) -> list[Work]:
        """Everything queued (of ``kinds`` only, if given), in arrival order, waiting up to ``timeout`` seconds
        for some."""
        with self._lock:
            if timeout > 0 and not any(kinds is None or w[0] in kinds for w in self._pending):
                taker = (kinds, threading.Condition(self._lock))
                self._takers.append(taker)
                try:
                    taker[1].wait(timeout)
                finally:
                    self._takers.remove(taker)
            if kinds is None:
                work = list(self._pending)
                self._pending.clear()
            else:
                work = [w for w in self._pending if w[0] in kinds]
                for taken in work:
                    del self._pending[taken]
            return work
