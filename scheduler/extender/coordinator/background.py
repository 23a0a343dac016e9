"""The background worker: plans gangs as soon as the store says they became plannable (so filter answers from a
plan instead of solving on kube-scheduler's critical path), makes room for gangs refused for it, writes
nominations, evictions and PodGang status, and expires reservations.

Two daemon threads: ``grove-planner`` plans, makes room, nominates (its writes return at once) and expires;
``grove-reporter`` writes PodGang status, Events and evictions, which block on the API server. On one thread, those
writes held plans and nominations back until after kube-scheduler had popped the pods they were for (seen with
pods arriving live, ``bench_e2e --real --live``). ``stop()`` ends
both within one tick. ``alive()`` feeds ``/healthz``: a dead planner would leave every gang to be planned on the
critical path and no reservation would ever expire; a dead reporter would leave PodGangs unreported.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from scheduler.extender.coordinator.coordinator import Coordinator
from scheduler.extender.coordinator.work import Kind, Work

__all__ = ["BackgroundWorker"]

log = logging.getLogger(__name__)


_PLANNING: tuple[Kind, ...] = ("plan", "nominate", "preempt")
_REPORTING: tuple[Kind, ...] = ("report", "running", "evict")


class BackgroundWorker:
    def __init__(self, coordinator: Coordinator, *, tick_seconds: float = 1.0) -> None:
        self._coordinator = coordinator
        self._tick = tick_seconds
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(
                target=self._run, args=(_PLANNING, self._planning_tick), name="grove-planner", daemon=True
            ),
            threading.Thread(
                target=self._run, args=(_REPORTING, self._reporting_tick), name="grove-reporter", daemon=True
            ),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=max(5.0, 2 * self._tick))

    def alive(self) -> bool:
        return all(thread.is_alive() for thread in self._threads) and not self._stop.is_set()

    def run_once(self, timeout: float = 0.0) -> int:
        """Do all the queued work now, in arrival order, on this thread (waiting up to ``timeout`` for some);
        returns how many items were handled. A simulation or a test calls it on its own clock."""
        work = self._coordinator.work.take(timeout)
        self._handle(work)
        self._reporting_tick()
        self._planning_tick()
        return len(work)

    def _handle(self, work: list[Work]) -> None:
        coordinator = self._coordinator
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
                elif kind == "preempt":
                    coordinator.preempt_ahead(ref)
                elif kind == "evict":
                    coordinator.evictor.run(ref)
                else:
                    coordinator.reporter.report(ref)
            except Exception:
                # One gang's failure must not stop planning for every other gang.
                log.exception("background work failed kind=%s gang=%s", kind, ref.key)

    def _planning_tick(self) -> None:
        self._coordinator.leading()  # notice a change of leadership even when no request arrives
        self._coordinator.expire()

    def _reporting_tick(self) -> None:
        self._coordinator.reporter.retry_failed()
        self._coordinator.evictor.retry_failed()
        self._coordinator.nominator.retry_failed()

    def _run(self, kinds: tuple[Kind, ...], tick: Callable[[], None]) -> None:
        while not self._stop.is_set():
            self._handle(self._coordinator.work.take(self._tick, kinds))
            tick()  # a failure here ends the thread, and /healthz says so
