"""kube-scheduler's scheduling queue, as far as the gang lifecycle can tell the difference.

Three places a pending pod can be (``pkg/scheduler/backend/queue/scheduling_queue.go``, ``backoff_queue.go``):

- **activeQ**: a heap ordered by priority (higher first), then by the pod's queue timestamp (earlier first). The
  timestamp is when the pod entered the queue and is refreshed each time it comes back after a failure, so pods
  never tried go before pods retried.
- **backoffQ**: pods that failed with an error (an extender ``Error``, a failed binding) wait
  ``initial × 2^(attempts−1)``, capped (1 s → 10 s by default), counted from their timestamp; ``attempts`` grows
  each time the pod is popped.
- **unschedulable**: pods some filter rejected (an extender's ``FailedNodes`` counts) are parked until a cluster
  event that may help (a bound pod deleted — which includes kube-scheduler forgetting an assumed pod after a failed
  binding —, a node added or changed) moves them back, to backoffQ if still backing off, else activeQ; or until
  they have been parked longer than 5 minutes (checked every 30 s).

Modelled as data only: time comes in as ``now``; the scheduler decides when to call what.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

__all__ = ["SchedulingQueue"]

INITIAL_BACKOFF = 1.0  # podInitialBackoffSeconds
MAX_BACKOFF = 10.0  # podMaxBackoffSeconds' default; a KubeSchedulerConfiguration may raise it
MAX_UNSCHEDULABLE = 300.0  # podMaxInUnschedulablePodsDuration
LEFTOVER_FLUSH_PERIOD = 30.0
_EPSILON = 1e-5  # the simulated clock counts in microseconds: a deadline a fraction of one away is due


@dataclass
class _Info:
    uid: str
    priority: int
    timestamp: float
    attempts: int = 0
    where: str = "active"  # active | backoff | unschedulable | flight


class SchedulingQueue:
    def __init__(self, *, max_backoff: float = MAX_BACKOFF) -> None:
        self._max_backoff = max_backoff
        self._info: dict[str, _Info] = {}
        self._active: list[tuple[int, float, int, str]] = []
        self._backoff: list[tuple[float, int, str]] = []
        self._parked: dict[str, None] = {}
        self._seq = itertools.count()

    def __contains__(self, key: str) -> bool:
        return key in self._info

    def add(self, key: str, *, uid: str, priority: int, now: float) -> None:
        """A new pending pod (informer add)."""
        if key in self._info:
            return
        self._info[key] = _Info(uid=uid, priority=priority, timestamp=now)
        self._push_active(key)

    def remove(self, key: str) -> None:
        """The pod was bound (by anyone) or deleted: it leaves the queue wherever it is (stale heap entries are
        skipped when they surface)."""
        self._info.pop(key, None)
        self._parked.pop(key, None)

    def pop(self, now: float) -> str | None:
        """The next pod to schedule, or None; the pod is then in flight until ``requeue_error``/``park``/``done``."""
        self.flush_backoff(now)
        while self._active:
            _, _, _, key = heapq.heappop(self._active)
            info = self._info.get(key)
            if info is None or info.where != "active":
                continue
            info.where = "flight"
            info.attempts += 1
            return key
        return None

    def requeue_error(self, key: str, *, uid: str, now: float) -> None:
        """Failed with an error (no rejecting filter plugin): back off and retry. A failure of an earlier pod of
        the same name (deleted and re-created meanwhile) is moot: the new one is queued on its own."""
        info = self._info.get(key)
        if info is None or info.uid != uid:
            return
        info.timestamp = now
        info.where = "backoff"
        heapq.heappush(self._backoff, (self._expiry(info), next(self._seq), key))

    def park(self, key: str, *, now: float) -> None:
        """Rejected by a filter (in-tree or the extender's FailedNodes): unschedulable until an event moves it."""
        info = self._info.get(key)
        if info is None:
            return
        info.timestamp = now
        info.where = "unschedulable"
        self._parked[key] = None

    def done(self, key: str) -> None:
        """Scheduled: it stays out of the queues while its binding runs (``remove`` once bound)."""
        info = self._info.get(key)
        if info is not None:
            info.where = "binding"

    def move_all(self, *, now: float) -> int:
        """A cluster event that may make parked pods schedulable (MoveAllToActiveOrBackoffQueue)."""
        moved = list(self._parked)
        for key in moved:
            self._unpark(key, now)
        return len(moved)

    def flush_leftover(self, now: float) -> int:
        stale = [key for key in self._parked if now - self._info[key].timestamp > MAX_UNSCHEDULABLE]
        for key in stale:
            self._unpark(key, now)
        return len(stale)

    def flush_backoff(self, now: float) -> None:
        while self._backoff and self._backoff[0][0] <= now + _EPSILON:
            _, _, key = heapq.heappop(self._backoff)
            info = self._info.get(key)
            if info is not None and info.where == "backoff":
                info.where = "active"
                self._push_active(key)

    def next_backoff(self) -> float | None:
        """When the earliest backing-off pod is due (stale entries may make this early, never late)."""
        return self._backoff[0][0] if self._backoff else None

    def where(self, key: str) -> str | None:
        info = self._info.get(key)
        return info.where if info is not None else None

    def _unpark(self, key: str, now: float) -> None:
        self._parked.pop(key, None)
        info = self._info[key]
        expiry = self._expiry(info)
        if expiry > now:
            info.where = "backoff"
            heapq.heappush(self._backoff, (expiry, next(self._seq), key))
        else:
            info.where = "active"
            self._push_active(key)

    def _push_active(self, key: str) -> None:
        info = self._info[key]
        info.where = "active"
        heapq.heappush(self._active, (-info.priority, info.timestamp, next(self._seq), key))

    def _expiry(self, info: _Info) -> float:
        if info.attempts == 0:
            return info.timestamp
        return info.timestamp + min(self._max_backoff, INITIAL_BACKOFF * 2 ** (info.attempts - 1))
