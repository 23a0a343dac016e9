"""``RoomAttempts``: what attempts to make room leave behind, and so when the next may run.

- a gang's last fruitless attempt, with what it read (``memo``) and when: it is tried again once that changes or
  ``retry_seconds`` pass;
- when each gang last preempted: at most once per ``backoff_seconds`` (an evicted pod of another scheduler created
  again onto the freed room must not make a gang evict in a loop);
- the deadline of each preemption under way: its victims must be gone by then;
- pods left out of choices for a while (a budget refused them, or they never went), capacity and all.

Thread-safe: the planner's thread writes most of it, the reporter's thread (a refused eviction) some.
"""

from __future__ import annotations

import threading
from collections.abc import Collection

__all__ = ["RoomAttempts"]


class RoomAttempts:
    def __init__(self, *, retry_seconds: float, backoff_seconds: float, exclude_seconds: float) -> None:
        self._retry = retry_seconds
        self._backoff = backoff_seconds
        self._exclude = exclude_seconds
        self._lock = threading.Lock()
        self._tried: dict[str, tuple[tuple[int, ...], float]] = {}
        self._last: dict[str, float] = {}
        self._deadlines: dict[str, float] = {}
        self._excluded: dict[str, float] = {}

    def may_try(self, gang: str, memo: tuple[int, ...], *, now: float) -> bool:
        """Whether an attempt for ``gang`` may run: what it would read changed since its last fruitless one, or
        ``retry_seconds`` passed; and it has not preempted within ``backoff_seconds``."""
        with self._lock:
            tried = self._tried.get(gang)
            if tried is not None and tried[0] == memo and now - tried[1] < self._retry:
                return False
            return now - self._last.get(gang, -1e18) >= self._backoff

    def fruitless(self, gang: str, memo: tuple[int, ...], *, now: float) -> None:
        with self._lock:
            self._tried[gang] = (memo, now)

    def just_tried(self, gang: str, *, now: float) -> bool:
        """Whether a fruitless attempt for ``gang`` ran at ``now``."""
        with self._lock:
            tried = self._tried.get(gang)
            return tried is not None and tried[1] == now

    def committed(self, gang: str, *, now: float, deadline: float | None) -> None:
        """The gang got room at ``now``; ``deadline``: when the pods it waits for must be gone (None: none)."""
        with self._lock:
            self._last[gang] = now
            self._tried.pop(gang, None)
            if deadline is not None:
                self._deadlines[gang] = deadline

    def refused(self, gang: str, pods: Collection[str], *, now: float) -> None:
        """A budget refused the gang's victims at the dry run: nothing was evicted, so the next attempt need not
        wait out the backoff, and those pods stay out for a while."""
        with self._lock:
            self._last.pop(gang, None)
            self._deadlines.pop(gang, None)
            for pod in pods:
                self._excluded[pod] = now + self._exclude

    def due(self, *, now: float, waiting: Collection[str]) -> list[str]:
        """Preemptions whose deadline passed (taken off the books); those of gangs no longer ``waiting`` for any
        pod are taken off too, quietly."""
        with self._lock:
            done = [gang for gang in self._deadlines if gang not in waiting]
            for gang in done:
                del self._deadlines[gang]
            due = [gang for gang, deadline in self._deadlines.items() if deadline <= now]
            for gang in due:
                del self._deadlines[gang]
            return due

    def under_way(self) -> list[str]:
        """Gangs with a preemption under way (a deadline on the books)."""
        with self._lock:
            return list(self._deadlines)

    def exclude(self, pods: Collection[str], *, now: float) -> None:
        with self._lock:
            for pod in pods:
                self._excluded[pod] = now + self._exclude

    def excluded(self, *, now: float) -> frozenset[str]:
        """Pods left out of choices now (their time out is over for the others)."""
        with self._lock:
            for pod in [pod for pod, until in self._excluded.items() if until <= now]:
                del self._excluded[pod]
            return frozenset(self._excluded)

    def reset(self) -> None:
        """Leadership changed: nothing decided before holds (pods left out stay out: they did not go, or a budget
        refused them, whoever leads)."""
        with self._lock:
            self._tried.clear()
            self._last.clear()
            self._deadlines.clear()
