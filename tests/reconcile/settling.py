"""Waiting on a reconciler that runs against the fake API server over HTTP: for a condition, or for it to settle."""

from __future__ import annotations

import time
from collections.abc import Callable

from benchmarks.sim.fakeapi import FakeApiServer


def quiet(server: FakeApiServer, *, for_seconds: float = 1.0) -> None:
    """Until no request has reached the server for ``for_seconds`` (within a minute)."""
    deadline = time.monotonic() + 60
    count, since = len(server.requests), time.monotonic()
    while time.monotonic() - since < for_seconds:
        assert time.monotonic() < deadline, "the reconciler never settled"
        time.sleep(0.05)
        if len(server.requests) != count:
            count, since = len(server.requests), time.monotonic()


def within(seconds: float, check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds} s"
        time.sleep(0.05)
