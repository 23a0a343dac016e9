"""The background worker: plans gangs as soon as the store says they became plannable (so filter answers from a
plan instead of solving on kube-scheduler's critical path), moves PodGangs to Running, and expires reservations.

One daemon thread; ``stop()`` ends it within one tick.
"""

from __future__ import annotations

import logging
import threading

from scheduler.cluster_writer import WriteError
from scheduler.coordinator.coordinator import Coordinator
from scheduler.coordinator.members import GangRef, gang_members
from scheduler.coordinator.status import running_status

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

    def run_once(self, timeout: float = 0.0) -> int:
        """Do the queued work now; returns how many items were handled (tests call this directly)."""
        events = self._coordinator.events
        work = events.take(timeout)
        for kind, ref in work:
            if self._stop.is_set():
                break
            try:
                if kind == "plan":
                    self._coordinator.plan(ref)
                else:
                    self._mark_running(ref)
            except Exception:
                # One gang's failure must not stop planning for every other gang.
                log.exception("background work failed kind=%s gang=%s", kind, ref.key)
        self._coordinator.leading()  # notice a change of leadership even when no request arrives
        self._coordinator.planner.expire()
        return len(work)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.run_once(self._tick)

    def _mark_running(self, ref: GangRef) -> None:
        coordinator = self._coordinator
        members = gang_members(coordinator.store, ref)
        status = None if isinstance(members, str) else running_status(members)
        if status is None:
            return
        try:
            coordinator.events.writer.patch_podgang_status(namespace=ref.namespace, name=ref.name, status=status)
        except WriteError as err:
            log.warning("podgang status not written gang=%s error=%s", ref.key, err)
