"""Work for the background worker, queued by whoever notices it (store events, state changes, the release).

An insertion-ordered set: the same work queued twice runs once, and arrival order is planning order.
"""

from __future__ import annotations

import threading
from typing import Literal

from scheduler.extender.coordinator.members import GangRef

__all__ = ["Work", "WorkQueue"]

Work = tuple[Literal["plan", "running", "report", "nominate"], GangRef]
"""plan: plan the gang ahead of kube-scheduler's filter; running: its pods may all run now (PodGang phase);
report: its state changed in a way the PodGang's status shows (Scheduled, PartiallyBound); nominate: its plan
changed, so its pods' nominatedNodeName may have to follow."""


class WorkQueue:
    def __init__(self) -> None:
        self._pending: dict[Work, None] = {}
        self._wake = threading.Condition()

    def put(self, work: Work) -> None:
        with self._wake:
            self._pending[work] = None
            self._wake.notify()

    def take(self, timeout: float) -> list[Work]:
        """Everything queued, in arrival order, waiting up to ``timeout`` seconds for something."""
        with self._wake:
            if not self._pending and timeout > 0:
                self._wake.wait(timeout)
            work = list(self._pending)
            self._pending.clear()
            return work
