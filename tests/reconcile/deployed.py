"""The reconciler deployed against the fake API server as it runs in a cluster (its watches and its loop), with
whatever else should run beside it, and a wait for what it will do."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kubernetes import client

from benchmarks.sim.fakeapi import FakeApiServer, running
from scheduler.reconcile.controller import Reconciler
from scheduler.reconcile.rest_client import KubeApi
from tests.reconcile.kubectl import Kubectl


@contextmanager
def reconciling(*beside: Callable[[FakeApiServer, threading.Event], None]) -> Iterator[tuple[FakeApiServer, Kubectl]]:
    """A started fake API server with the reconciler running against it and each of ``beside`` (given the server
    and the event that ends them) on a thread of its own; all stopped on exit."""
    with running() as server:
        api = KubeApi(client.ApiClient(client.Configuration(host=server.url)), timeout=10.0)
        stop = threading.Event()
        threads = api.start_watches(stop)
        loop = threading.Thread(target=Reconciler(api).run, kwargs={"stop": stop, "poll_seconds": 0.1}, daemon=True)
        helpers = [loop, *(threading.Thread(target=run, args=(server, stop), daemon=True) for run in beside)]
        for thread in helpers:
            thread.start()
        try:
            yield server, Kubectl(server.url)
        finally:
            stop.set()
            for thread in [*helpers, *threads]:
                thread.join(timeout=60)


def until(check: Callable[[], bool], *, seconds: float = 60.0) -> None:
    """Wait for something that will happen: generous, for a loaded machine."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"not there within {seconds:.0f} s")
