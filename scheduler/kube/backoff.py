"""Capped exponential back-off between attempts at the API server: ``initial`` seconds, doubling up to ``cap``.

The watches draw each delay with full jitter (uniformly from the upper half of the step), so replicas that lost the
API together do not return together; ``initc`` waits the step itself (``jitter=False``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Backoff"]


@dataclass
class Backoff:
    initial: float = 0.5
    cap: float = 30.0
    jitter: bool = True
    _next: float = 0.0

    def delay(self) -> float:
        """The next wait, in seconds; the step doubles each call until ``reset``."""
        self._next = min(self.cap, max(self.initial, self._next * 2))
        return random.uniform(self._next / 2, self._next) if self.jitter else self._next

    def reset(self) -> None:
        """After a success: the next delay starts from ``initial`` again."""
        self._next = 0.0
