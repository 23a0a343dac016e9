"""The reconciler's probes: what /readyz and /healthz answer, over real HTTP, as its state changes."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from scheduler.reconcile.health import Health, HealthServer

Fetch = Callable[[str], tuple[int, str]]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def health(clock: Clock) -> Health:
    return Health(stall_seconds=300, clock=clock)


@pytest.fixture
def get(health: Health) -> Iterator[Fetch]:
    server = HealthServer(health, host="127.0.0.1", port=0)  # any free port
    server.start()

    def fetch(path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}", timeout=5) as reply:
                return int(reply.status), reply.read().decode()
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode()

    yield fetch
    server.stop()


def test_not_ready_until_every_informer_has_listed(health: Health, get: Fetch) -> None:
    assert get("/readyz") == (503, "informers not synced: waiting for the first list of every watched kind\n")
    assert get("/healthz") == (200, "ok\n"), "alive while it waits: a restart would not list any sooner"
    health.synced()
    assert get("/readyz") == (200, "ok: informers synced; leader: none elected (one replica)\n")


def test_a_loop_that_stops_moving_is_not_alive(health: Health, clock: Clock, get: Fetch) -> None:
    health.synced()
    clock.now += 299
    assert get("/healthz")[0] == 200
    clock.now += 2  # 301 s since the last tick
    assert get("/healthz") == (503, "reconcile loop stalled: no progress for 301s (limit 300s)\n")
    health.tick()
    assert get("/healthz") == (200, "ok\n")
    assert get("/readyz")[0] == 200, "readiness is about the cache, not the loop"


def test_a_dead_watch_thread_is_not_alive(health: Health, get: Fetch) -> None:
    release = threading.Event()
    running = threading.Thread(target=release.wait, name="watch-Pod", daemon=True)
    ended = threading.Thread(target=lambda: None, name="watch-PodGang", daemon=True)
    running.start()
    ended.start()
    ended.join()
    health.watching([running])
    assert get("/healthz")[0] == 200
    health.watching([running, ended])
    assert get("/healthz") == (503, "watch threads stopped: watch-PodGang\n")
    release.set()


def test_other_paths_are_not_found(get: Fetch) -> None:
    assert get("/metrics")[0] == 404
    assert get("/readyz?verbose")[0] == 503
