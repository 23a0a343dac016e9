"""How long a gang may take to gather: its reservation's lifetime, sized to the gang and to kube-scheduler's pace.

kube-scheduler offers pods to the extender one at a time, so a gang of n members needs at least n scheduling
cycles before every member has reached bind once; members answered ``Error`` meanwhile come back after up to
10 s of backoff. And a gang planned ahead waits for kube-scheduler to work through the pods queued before it:
planned in the queue's order, those are the pods already holding reservations. A fixed TTL either strands
capacity for small gangs or lets a long queue's tail expire before kube-scheduler reaches it, so the window is

    base + slack × (members still to gather + pods ahead) / (filter calls per second) + kube-scheduler's maximum backoff

with the pace measured as an exponentially weighted rate of filter calls. The window is granted when a gang is
planned (counting the pods ahead) and again whenever one of its members becomes ready (by then kube-scheduler has
reached the gang: its own members only); a gang that stops progressing still expires.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

__all__ = ["ArrivalRate", "GatherWindow"]

MAX_BACKOFF_SECONDS = 10.0
"""kube-scheduler's default ``podMaxBackoffSeconds``: the longest a member answered Error stays away."""


class ArrivalRate:
    """Events per second, exponentially weighted with time constant ``tau`` (seconds): each event adds ``1/tau``
    and the estimate decays by ``e^(-dt/tau)`` in between, so it follows the current pace within a few ``tau``."""

    def __init__(self, *, tau: float = 5.0) -> None:
        self._tau = tau
        self._rate = 0.0
        self._at: float | None = None
        self._lock = threading.Lock()

    def observe(self, now: float) -> None:
        with self._lock:
            self._rate = self._decayed(now) + 1.0 / self._tau
            self._at = now

    def per_second(self, now: float) -> float:
        with self._lock:
            return self._decayed(now)

    def _decayed(self, now: float) -> float:
        if self._at is None:
            return 0.0
        return self._rate * math.exp(-max(0.0, now - self._at) / self._tau)


@dataclass(frozen=True)
class GatherWindow:
    base_seconds: float = 60.0  # what any gang gets: room for a slow API server and a few retries
    slack: float = 2.0  # members arrive in more than one pass (backoff, retries): allow twice the ideal
    # Before kube-scheduler has offered anything the measured pace is 0; below this (an idle cluster) it is not
    # trusted: windows would grow huge. kube-scheduler through this extender runs well above this floor on a real
    # control plane (``bench_e2e --real``: docs/bench_e2e.md), so the floor errs towards holding a reservation too
    # long, never too short.
    min_rate: float = 20.0

    def seconds(self, *, members: int, rate: float, ahead: int = 0) -> float:
        return self.base_seconds + self.slack * (members + ahead) / max(rate, self.min_rate) + MAX_BACKOFF_SECONDS
