"""A client's requests held to a rate, as client-go's token bucket holds them (``--qps``, ``--burst``).

Up to ``burst`` requests go at once; after that one more every ``1/qps`` seconds. Shared by every thread of a
client: a caller waits its turn, so concurrent workers together stay within the rate the API server's operator
granted the client, and a burst of creates does not starve the other clients of the API server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["TokenBucket"]


class TokenBucket:
    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not qps > 0:
            raise ValueError(f"qps must be positive, not {qps}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, not {burst}")
        self.qps, self.burst = qps, burst
        self._clock, self._sleep = clock, sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._at = clock()

    def take(self) -> float:
        """Wait for a token; the seconds waited. Turns are given in the order they are asked for: each caller
        reserves its token (the count may go below zero) and sleeps until it is due."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._at) * self.qps)
            self._at = now
            self._tokens -= 1
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait
