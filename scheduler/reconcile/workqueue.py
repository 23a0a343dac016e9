"""The PodCliqueSets waiting to be reconciled, shared by several workers so that distinct objects are reconciled at
once and one object never by two workers at a time (as controller-runtime's workers take client-go's workqueue).

A key added while a worker holds it is not handed to another: it is marked, and queued again once that worker is
done, so a change seen mid-pass is never lost and never raced. A key added twice before a worker takes it is taken
once. ``add_after`` holds a key back until its time (a retry, a ``terminationDelay`` running out).
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable

from scheduler.reconcile.client import ObjectKey

__all__ = ["WorkQueue"]


class WorkQueue:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._ready = threading.Condition()
        self._queue: deque[ObjectKey] = deque()
        self._dirty: set[ObjectKey] = set()  # waiting, or changed while held
        self._held: set[ObjectKey] = set()
        self._later: list[tuple[float, int, ObjectKey]] = []
        self._order = itertools.count()  # ties in _later: first added first
        self._closed = False

    def add(self, key: ObjectKey) -> None:
        with self._ready:
            self._add(key)

    def _add(self, key: ObjectKey) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._held:
            self._queue.append(key)
            self._ready.notify()

    def add_after(self, key: ObjectKey, seconds: float) -> None:
        with self._ready:
            if seconds <= 0:
                self._add(key)
                return
            heapq.heappush(self._later, (self._clock() + seconds, next(self._order), key))
            self._ready.notify_all()  # a worker waiting may now have an earlier time to wake at

    def get(self, timeout: float) -> ObjectKey | None:
        """The next key, now held by the caller until ``done``; None after ``timeout`` seconds or once closed."""
        deadline = self._clock() + timeout
        with self._ready:
            while True:
                now = self._clock()
                while self._later and self._later[0][0] <= now:
                    self._add(heapq.heappop(self._later)[2])
                if self._queue:
                    key = self._queue.popleft()
                    self._dirty.discard(key)
                    self._held.add(key)
                    return key
                if self._closed or now >= deadline:
                    return None
                wake = min(deadline, self._later[0][0]) if self._later else deadline
                self._ready.wait(wake - now)

    def done(self, key: ObjectKey) -> None:
        """The holder is done with ``key``: if it changed meanwhile, it is queued again."""
        with self._ready:
            self._held.discard(key)
            if key in self._dirty:
                self._queue.append(key)
                self._ready.notify()

    def close(self) -> None:
        """Wake every waiting worker with None; keys still queued are dropped (the next start lists them all)."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def held(self) -> int:
        """Keys a worker holds right now."""
        with self._ready:
            return len(self._held)

    def __len__(self) -> int:
        with self._ready:
            return len(self._queue) + len(self._later)
