"""The background worker: plans gangs as soon as the store says they became plannable (so filter answers from a
plan instead of solving on kube-scheduler's critical path), writes PodGang status, and expires reservations.

One daemon thread; ``stop()`` ends it within one tick. ``alive()`` feeds ``/healthz``: a dead planner would leave
every gang to be planned on the critical path and no reservation would ever expire.
"""

from __future__ import annotations

import logging
import threading

from scheduler.extender.coordinator.coordinator import Coordinator

__all__ = ["BackgroundWorker"]

log = logging.getLogger(__name__)


class BackgroundWorker:
    def __init__(self, coordinator: Coordinator, *, tick_seconds: float = 1.0) -> None:
        self._coordinator = coordinator
        self._tick = tick_seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="grove-planner", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=max(5.0, 2 * self._tick))

    def alive(self) -> bool:
        return self._thread.is_alive() and not self._stop.is_set()

    def run_once(self, timeout: float = 0.0) -> int:
        """Do the queued work now (waiting up to ``timeout`` for some); returns how many items were handled.
        The thread calls it in a loop; a simulation calls it on its own clock."""
        coordinator = self._coordinator
        work = coordinator.work.take(timeout)
        for kind, ref in work:
            if self._stop.is_set():
                break
            try:
                if kind == "plan":
                    coordinator.plan_ahead(ref)
                elif kind == "running":
                    coordinator.reporter.mark_running(ref)
                elif kind == "nominate":
                    coordinator.nominator.sync(ref)
                else:
                    coordinator.reporter.report(ref)
            except Exception:
                # One gang's failure must not stop planning for every other gang.
                log.exception("background work failed kind=%s gang=%s", kind, ref.key)
        coordinator.reporter.retry_failed()
        coordinator.leading()  # notice a change of leadership even when no request arrives
        coordinator.expire()
        return len(work)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.run_once(self._tick)
