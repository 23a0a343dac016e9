"""What one HTTP/2 connection may make the server do for nothing, and how loudly the server says so when it stops.

An authenticated client can still spend the server's CPU without asking for an answer: streams opened and reset at
once (CVE-2023-44487, rapid reset), control frames that each need handling or an acknowledgement (PING, SETTINGS,
WINDOW_UPDATE, PRIORITY, empty DATA: the 2019 flood advisories). A legitimate client sends few of these per request,
so each connection gets a ``Budget`` of them, refilled over time and by the requests it makes; a client that spends
it all is told to calm down (GOAWAY ``ENHANCE_YOUR_CALM``) and dropped, as Go's net/http and nginx do.

``QuietLog`` keeps what the server says about misbehaving clients to one line per reason per interval, counting the
rest, so a client cannot flood the log instead.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["LOG_INTERVAL", "Budget", "QuietLog"]

LOG_INTERVAL = 10.0
"""At most one line per reason in this many seconds."""


class Budget:
    """A token bucket: ``burst`` at most, refilled at ``per_second``; ``credit`` adds to it (never past ``burst``)."""

    __slots__ = ("_at", "_burst", "_rate", "_tokens")

    def __init__(self, *, burst: float, per_second: float, now: float) -> None:
        self._burst = burst
        self._rate = per_second
        self._tokens = burst
        self._at = now

    def spend(self, now: float) -> bool:
        """Take one token; False when none is left (the client has overspent)."""
        tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
        self._at = now
        if tokens < 1.0:
            self._tokens = tokens
            return False
        self._tokens = tokens - 1.0
        return True

    def credit(self, amount: float) -> None:
        self._tokens = min(self._burst, self._tokens + amount)


class QuietLog:
    """Logs at most one line per reason every ``interval`` seconds; the next line says how many were left out."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        level: int = logging.INFO,
        interval: float = LOG_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._level = level
        self._interval = interval
        self._clock = clock
        self._quiet_until: dict[str, float] = {}
        self._unlogged: dict[str, int] = {}

    def __call__(self, reason: str, message: str, *args: object) -> None:
        suffix = self.admit(reason)
        if suffix is not None:
            self._log.log(self._level, message + " reason=%s%s", *args, reason, suffix)

    def admit(self, reason: str) -> str | None:
        """Whether a line for ``reason`` may be written now: None if not (it is counted), else what ends the line
        (how many were left out since the last, or nothing), for a caller that writes its own."""
        now = self._clock()
        if now < self._quiet_until.get(reason, float("-inf")):
            self._unlogged[reason] = self._unlogged.get(reason, 0) + 1
            return None
        if len(self._quiet_until) > 1024:  # reasons are few; a bound anyway, whatever a caller passes
            self._quiet_until.clear()
        self._quiet_until[reason] = now + self._interval
        more = self._unlogged.pop(reason, 0)
        return f" (and {more} more for this reason in the last {self._interval:g}s)" if more else ""
