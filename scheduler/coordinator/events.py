"""What the coordinator does when the store changes: release reservations of pods that got bound or went away,
note that capacity was freed (infeasible gangs may fit now), mark waiting gangs for another look, and queue gangs
to plan ahead and PodGangs whose phase may have moved to Running.

``on_change`` runs on the store writer's thread (a watch, or a bind in embedded mode): it only updates the ledger
and queues work; the background worker does the rest.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Literal

from api.grove import PodGang
from api.kube import Node, Pod
from scheduler.cluster_writer import ClusterWriter
from scheduler.coordinator.ledger import GangState, Ledger
from scheduler.coordinator.members import GangRef, gang_ref_of
from scheduler.coordinator.planning import Planner
from scheduler.state.store import ClusterStore, EventType, Kind

__all__ = ["StoreEvents", "Work"]

Work = tuple[Literal["plan", "status"], GangRef]


def _fingerprint(node: Node) -> tuple[object, ...]:
    # Node objects change often (conditions, heartbeats); only these change what fits where.
    return (
        tuple(sorted(node.allocatable().items())),
        tuple(sorted(node.metadata.labels.items())),
        node.spec.unschedulable,
        tuple((t.key, t.value, t.effect) for t in node.spec.taints),
    )


class StoreEvents:
    def __init__(self, *, store: ClusterStore, ledger: Ledger, planner: Planner, writer: ClusterWriter) -> None:
        self.store = store
        self.ledger = ledger
        self.planner = planner
        self.writer = writer
        self._nodes: dict[str, tuple[object, ...]] = {}
        self._pending: dict[Work, None] = {}  # insertion-ordered set: arrival order is planning order
        self._wake = threading.Condition()

    def on_change(self, kind: Kind, event_type: EventType, obj: object) -> None:
        if isinstance(obj, Pod):
            self._pod(event_type, obj)
        elif isinstance(obj, PodGang):
            self._podgang(event_type, obj)
        elif isinstance(obj, Node):
            self._node(event_type, obj)

    def take(self, timeout: float) -> list[Work]:
        """Queued work in arrival order, waiting up to ``timeout`` for some."""
        with self._wake:
            if not self._pending:
                self._wake.wait(timeout)
            work = list(self._pending)
            self._pending.clear()
            return work

    def queued(self) -> Mapping[Work, None]:
        return dict(self._pending)

    def _queue(self, work: Work) -> None:
        with self._wake:
            self._pending[work] = None
            self._wake.notify()

    def _pod(self, event_type: EventType, pod: Pod) -> None:
        ref = gang_ref_of(pod)
        gone = event_type == "DELETED" or pod.terminal
        with self.ledger.lock:
            had_reservation = self.ledger.book.release_pod(pod.key) is not None if gone or pod.spec.nodeName else False
            if gone and (had_reservation or pod.spec.nodeName):
                self.ledger.epoch += 1
            record = self.ledger.records.get(ref.key)
            if record is not None and record.state in (GangState.WAITING, GangState.INFEASIBLE):
                record.dirty = True
            if ref.solo and gone:
                self.ledger.records.pop(ref.key, None)
        if ref.solo:
            return
        if not gone and not pod.spec.nodeName and not pod.gated:
            self._queue(("plan", ref))
        elif pod.status.phase == "Running":
            self._queue(("status", ref))

    def _podgang(self, event_type: EventType, podgang: PodGang) -> None:
        ref = GangRef(podgang.metadata.namespace, podgang.metadata.name)
        if event_type == "DELETED":
            self.ledger.drop(ref.key)
            return
        with self.ledger.lock:
            record = self.ledger.records.get(ref.key)
            if record is not None and record.state in (GangState.WAITING, GangState.INFEASIBLE):
                record.dirty = True
        self._queue(("plan", ref))

    def _node(self, event_type: EventType, node: Node) -> None:
        if event_type == "DELETED":
            self._nodes.pop(node.name, None)
            self.ledger.freed()
            return
        fingerprint = _fingerprint(node)
        if self._nodes.get(node.name) != fingerprint:
            self._nodes[node.name] = fingerprint
            self.ledger.freed()
