"""The reconciler's ``/healthz`` and ``/readyz`` for the kubelet, served on a thread of their own.

What they say, and nothing they cannot know:

- ``/readyz``: 200 once every informer has listed once (its view of the cluster is whole), 503 before. The
  reconciler elects no leader (one replica, ``Recreate``), and the body says so rather than claim a lease.
- ``/healthz``: 200 while every watch thread is alive and the reconcile loop has moved within ``stall_seconds``
  (it ticks after each PodCliqueSet it reconciles and each time it waits for changes); 503 naming what stopped.
  A loop stuck in one pass, or a watch thread that died, is what a restart mends.

The server is stdlib ``http.server`` on a daemon thread: answering a probe reads three fields under a lock and never
waits for the loop, so a slow pass cannot make the kubelet's probe time out, and the loop never waits for a probe.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

__all__ = ["DEFAULT_STALL_SECONDS", "Health", "HealthServer"]

log = logging.getLogger(__name__)

# Each API request of a pass times out in 10 s; a pass that has not moved in 5 minutes is stuck, not busy.
DEFAULT_STALL_SECONDS = 300.0


class Health:
    """What the probes report: informer sync, watch threads, the loop's last tick. Methods are thread-safe."""

    def __init__(self, *, stall_seconds: float = DEFAULT_STALL_SECONDS, clock: Callable[[], float] = time.monotonic):
        self._stall_seconds = stall_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._synced = False
        self._last_tick = clock()
        self._watches: tuple[threading.Thread, ...] = ()

    def synced(self) -> None:
        """Every informer has listed once (``start_informers``' ``on_synced``)."""
        with self._lock:
            self._synced = True

    def watching(self, threads: Sequence[threading.Thread]) -> None:
        """The watch threads whose death makes the reconciler blind."""
        with self._lock:
            self._watches = tuple(threads)

    def tick(self) -> None:
        """The reconcile loop moved."""
        with self._lock:
            self._last_tick = self._clock()

    def ready(self) -> tuple[bool, str]:
        with self._lock:
            synced = self._synced
        if not synced:
            return False, "informers not synced: waiting for the first list of every watched kind\n"
        return True, "ok: informers synced; leader: none elected (one replica)\n"

    def live(self) -> tuple[bool, str]:
        with self._lock:
            idle = self._clock() - self._last_tick
            dead = [t.name for t in self._watches if not t.is_alive()]
        if dead:
            return False, f"watch threads stopped: {', '.join(dead)}\n"
        if idle > self._stall_seconds:
            return False, f"reconcile loop stalled: no progress for {idle:.0f}s (limit {self._stall_seconds:g}s)\n"
        return True, "ok\n"


class HealthServer:
    """``/healthz`` and ``/readyz`` of ``health`` in plain HTTP on ``host:port``, on a daemon thread."""

    def __init__(self, health: Health, *, host: str, port: int) -> None:
        checks = {"/healthz": health.live, "/readyz": health.ready}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                check = checks.get(self.path.split("?", 1)[0])
                ok, text = check() if check else (False, "not found: /healthz or /readyz\n")
                body = text.encode()
                self.send_response(200 if ok else 404 if check is None else 503)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # probes every few seconds: not logged
                return

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="health", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()
        log.info("health probes serving port=%d", self.port)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
