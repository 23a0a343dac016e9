"""Waiting for what a watch thread will do, in tests of the Kubernetes-facing code."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable[[], bool], *, timeout: float = 60.0) -> None:
    """Poll ``predicate`` until it holds. Waiting for something that will happen: generous, so a loaded machine
    never fails the test."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.01)
