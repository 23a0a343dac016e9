"""``Evictor``: carries out a preemption the planner decided — every victim evicted through the Eviction API, each
with an Event naming the gang it made way for — on the reporter thread, whose writes block on the API server.

The order of work keeps a victim gang whole or untouched for as long as the API lets it:

1. **Ask first.** Every victim is evicted with ``dryRun`` before any is evicted for real: a PodDisruptionBudget that
   refuses one (HTTP 429) abandons the whole preemption with nothing evicted. The preemptor gives its plan back and
   is planned again later without that pod's gang (``refused``). A victim already gone (404) or re-created (the UID
   precondition, 409) needs nothing.
2. **Then evict**, victim by victim, checking before each that the preemptor still waits for it: a preemptor that
   went away meanwhile (its PodGang deleted, its plan given up) stops the rest; what was evicted stays evicted
   (Kubernetes has no undo), and its capacity goes back to the queue. A victim gang evicted whole is first dropped
   from the gang table, so its members' going is not mistaken for a partly bound gang to repair, and its PodGang
   says ``Scheduled=False, reason=Preempted``.
3. An eviction refused after the dry run said yes (a budget that changed in between) or not answered is tried again
   on later ticks while the preemptor still waits for the pod; the planner gives the plan up at its deadline.

Only the leader evicts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from scheduler.extender.cluster_writer import ClusterWriter
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef
from scheduler.extender.coordinator.metrics import CoordinatorMetrics
from scheduler.extender.coordinator.status import preempted_status
from scheduler.extender.coordinator.victims import VictimPod
from scheduler.extender.coordinator.work import WorkQueue
from scheduler.extender.state.store import ClusterStore
from scheduler.kube.errors import WriteError

__all__ = ["EvictionOrder", "Evictor", "Note"]

log = logging.getLogger(__name__)

_GONE = frozenset({404, 409})  # deleted, or re-created under the same name: nothing to evict


@dataclass(frozen=True)
class Note:
    """An Event to record about an object (``kind`` Pod or PodGang)."""

    namespace: str
    kind: str
    name: str
    uid: str
    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Normal"


@dataclass(frozen=True)
class EvictionOrder:
    preemptor: GangRef
    victims: tuple[VictimPod, ...]
    whole: tuple[GangRef, ...]  # victim PodGangs evicted whole
    because: str  # "PodGang ns/x (priority 1000)": what each victim's Event names
    notes: tuple[Note, ...] = ()  # Events to record first (the preemptor's, the gangs that yielded)
    checked: bool = False  # the dry run passed


Refused = Callable[[GangRef, str, Sequence[str]], None]
"""(preemptor, why, the pods refused): a PodDisruptionBudget said no; the preemption is given up."""


class Evictor:
    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        writer: ClusterWriter,
        work: WorkQueue,
        metrics: CoordinatorMetrics,
        may_write: Callable[[], bool],
        refused: Refused,
        wall_clock: Callable[[], datetime],
    ) -> None:
        self._store = store
        self._table = table
        self._writer = writer
        self._work = work
        self._metrics = metrics
        self._may_write = may_write
        self._refused = refused
        self._wall_clock = wall_clock
        self._lock = threading.Lock()
        self._orders: dict[str, EvictionOrder] = {}
        self._failed: dict[str, EvictionOrder] = {}
        self._notes: dict[str, list[Note]] = {}

    def order(self, order: EvictionOrder) -> None:
        """Queue a preemption's evictions (the planner calls this once its plan is committed)."""
        with self._lock:
            self._orders[order.preemptor.key] = order
            self._failed.pop(order.preemptor.key, None)
        self._work.put(("evict", order.preemptor))

    def note(self, ref: GangRef, notes: Sequence[Note]) -> None:
        """Queue Events about a preemption that evicts nothing (reservations that yielded, a plan given up)."""
        with self._lock:
            self._notes.setdefault(ref.key, []).extend(notes)
        self._work.put(("evict", ref))

    def pending(self) -> dict[str, list[str]]:
        """Preemptor → the victims it still has to evict (``/debug``, tests)."""
        with self._lock:
            orders = {**self._failed, **self._orders}
            return {key: [v.key for v in order.victims] for key, order in orders.items()}

    def reset(self) -> None:
        """Leadership changed: the next leader decides afresh."""
        with self._lock:
            self._orders.clear()
            self._failed.clear()
            self._notes.clear()

    def retry_failed(self) -> None:
        """Try again what could not be evicted (the reporter calls this once per tick)."""
        with self._lock:
            failed, self._failed = self._failed, {}
            self._orders.update({k: v for k, v in failed.items() if k not in self._orders})
        for order in failed.values():
            self.run(order.preemptor)

    def run(self, ref: GangRef) -> None:
        """Carry out the preemptor's order (the reporter thread)."""
        with self._lock:
            order = self._orders.pop(ref.key, None)
            notes = self._notes.pop(ref.key, [])
        if not self._may_write():
            return
        for note in notes:
            self._record(note)
        if order is None:
            return
        for note in order.notes:
            self._record(note)
        order = replace(order, notes=())
        awaited = self._table.awaiting(ref.key)
        victims = tuple(v for v in order.victims if v.key in awaited)
        if not victims:
            log.info("preemption dropped preemptor=%s reason=no longer waiting for its victims", ref.key)
            return
        order = replace(order, victims=victims)
        if not order.checked:
            asked = self._ask(order)
            if asked is None:
                return
            order = asked
        for gang in order.whole:
            self._drop_whole(gang, order.because)
        order = replace(order, whole=())
        failed = [victim for victim in order.victims if not self._evict(ref, victim, order.because)]
        if failed:
            with self._lock:
                self._failed[ref.key] = replace(order, victims=tuple(failed))

    def _ask(self, order: EvictionOrder) -> EvictionOrder | None:
        """The dry run: the order checked, or None when it is given up (refused) or put off (no answer)."""
        for victim in order.victims:
            namespace, name = victim.key.split("/", 1)
            try:
                self._writer.evict(namespace=namespace, name=name, uid=victim.uid, dry_run=True)
            except WriteError as err:
                if err.status in _GONE:
                    continue
                if err.status == 429:
                    self._metrics.evictions.labels("refused").inc()
                    self._refused(order.preemptor, f"evicting {victim.key} for it: {err}", [victim.key])
                    return None
                with self._lock:
                    self._failed[order.preemptor.key] = order
                return None
        return replace(order, checked=True)

    def _evict(self, preemptor: GangRef, victim: VictimPod, because: str) -> bool:
        """Evict one victim, unless the preemptor stopped waiting for it; False: try again later."""
        if victim.key not in self._table.awaiting(preemptor.key):
            # The preemptor went away or gave up: the rest is left alone, and said so.
            log.info("eviction skipped victim=%s preemptor=%s reason=no longer waited for", victim.key, preemptor.key)
            return True
        namespace, name = victim.key.split("/", 1)
        try:
            self._writer.evict(namespace=namespace, name=name, uid=victim.uid)
        except WriteError as err:
            if err.status in _GONE:
                return True
            self._metrics.evictions.labels("failed").inc()
            log.warning("eviction failed victim=%s preemptor=%s error=%s", victim.key, preemptor.key, err)
            return False
        self._metrics.evictions.labels("evicted").inc()
        log.info("evicted victim=%s node=%s preemptor=%s", victim.key, victim.node, preemptor.key)
        self._record(
            Note(
                namespace, "Pod", name, victim.uid, "Preempted", f"evicted by grove-extender to make room for {because}"
            )
        )
        return True

    def _drop_whole(self, gang: GangRef, because: str) -> None:
        self._table.forget(gang.key)
        podgang = self._store.podgang(gang.key)
        if podgang is None:
            return
        message = f"evicted whole by grove-extender to make room for {because}"
        try:
            self._writer.patch_podgang_status(
                namespace=gang.namespace,
                name=gang.name,
                status=preempted_status(podgang, message=message, now=self._wall_clock()),
            )
        except WriteError as err:
            log.warning("podgang status not written gang=%s error=%s", gang.key, err)
        self._record(Note(gang.namespace, "PodGang", gang.name, podgang.metadata.uid, "Preempted", message, "Warning"))

    def _record(self, note: Note) -> None:
        try:
            self._writer.record_event(
                namespace=note.namespace,
                kind=note.kind,
                name=note.name,
                uid=note.uid,
                reason=note.reason,
                message=note.message,
                type=note.type,
            )
        except WriteError as err:
            log.warning(
                "event not written object=%s/%s reason=%s error=%s", note.namespace, note.name, note.reason, err
            )
