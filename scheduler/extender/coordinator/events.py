"""What the store's changes mean for the gangs: each becomes a ``GangTable`` transition, plus work for later.

- a pod bound → ``member_bound_observed`` (its reservation becomes bound capacity);
- a pod deleted or finished → ``member_gone``; a gang whose PodGang and pods are all gone is forgotten; a pod
  being deleted (``deletionTimestamp``: evicted, preempted) → ``member_gone`` already, its capacity freed only later;
- a pod added or ungated → ``members_changed``, and the gang is queued to be planned ahead (a pending pod's status
  rewritten by kube-scheduler after each failed attempt is not news, nor Grove's own gate lifted: plans include
  the pods it alone holds);
- a PodGang deleted → ``forget``, and its waiting bind calls are answered at once;
- a node's capacity, labels, taints or schedulability changed → ``capacity_freed`` (refusals may not hold);
- a bound pod deleted or finished, ours or another scheduler's (a ``ForeignPod``) → ``capacity_freed``: a pod
  refused for room would otherwise stay refused until unrelated news; and ``victim_gone``: a gang that preempted
  it stops waiting for it;
- a PriorityClass changed → ``capacity_freed``: gangs' priorities, and so who yields to whom, may have changed.

``on_change`` runs on the store writer's thread (a watch, or an in-memory bind): it only calls transitions and
queues work; the background worker plans and writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from api.core import Node, Pod, PriorityClass
from api.grove import GANG_GATE, PodGang
from scheduler.extender.coordinator.gang_table import GangTable
from scheduler.extender.coordinator.members import GangRef, gang_ref_of
from scheduler.extender.coordinator.waiters import BindWaiters
from scheduler.extender.coordinator.work import WorkQueue
from scheduler.extender.state.store import ClusterStore, EventType, Kind
from scheduler.kube.foreign import ForeignPod

__all__ = ["StoreEvents"]


def _fingerprint(node: Node) -> tuple[object, ...]:
    # Node objects change often (conditions, heartbeats); only these change what fits where.
    return (
        tuple(sorted(node.allocatable().items())),
        tuple(sorted(node.metadata.labels.items())),
        node.spec.unschedulable,
        tuple((t.key, t.value, t.effect) for t in node.spec.taints),
    )


class StoreEvents:
    def __init__(
        self,
        *,
        store: ClusterStore,
        table: GangTable,
        work: WorkQueue,
        waiters: BindWaiters,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._clock = clock
        self._table = table
        self._work = work
        self._waiters = waiters
        self._nodes: dict[str, tuple[object, ...]] = {}
        self._specs: dict[str, object] = {}  # PodGang → its last spec: status writes are no news to the plan
        # Pending pod → held (gated by more than Grove's own gate, which plans look through), as last seen:
        # kube-scheduler rewrites a pending pod's status on every failed attempt, and the reconciler lifts Grove's
        # gate from a planned gang's pods one by one; neither is news to the plan. A pod appearing, or losing
        # another's gate, is.
        self._pending: dict[str, bool] = {}

    def on_change(self, kind: Kind, event_type: EventType, obj: object) -> None:
        if isinstance(obj, ForeignPod):
            if event_type == "DELETED" or obj.terminal:
                self._table.victim_gone(obj.key, now=self._clock())
            if obj.node and (event_type == "DELETED" or obj.terminal):
                self._table.capacity_freed()
        elif isinstance(obj, Pod):
            self._pod(event_type, obj)
        elif isinstance(obj, PodGang):
            self._podgang(event_type, obj)
        elif isinstance(obj, Node):
            self._node(event_type, obj)
        elif isinstance(obj, PriorityClass):
            self._table.capacity_freed()

    def _pod(self, event_type: EventType, pod: Pod) -> None:
        ref = gang_ref_of(pod)
        if event_type == "DELETED" or pod.terminal or pod.spec.nodeName or pod.deleting:
            self._pending.pop(pod.key, None)
        if event_type != "DELETED" and pod.deleting and not pod.terminal:
            # Evicted or deleted: no longer a member the gang can count on, though its node's capacity is held
            # until the kubelet is done with it (the DELETED that follows frees it).
            self._table.member_gone(ref.key, pod.key)
            return
        if event_type == "DELETED" or pod.terminal:
            self._table.victim_gone(pod.key, now=self._clock())
            self._table.member_gone(ref.key, pod.key)
            if pod.spec.nodeName:
                self._table.capacity_freed()  # its gang record may be gone (a solo pod, an expired gang)
            if not ref.solo and self._store.podgang(ref.key) is None and not self._store.pods_of_gang(ref.key):
                self._forget(ref, f"PodGang {ref.key} and its pods are gone")
            return
        if pod.spec.nodeName:
            self._table.member_bound_observed(ref.key, pod.key, node=pod.spec.nodeName)
            if not ref.solo and pod.status.phase == "Running":
                self._work.put(("running", ref))
            return
        held = pod.gated and not (not ref.solo and pod.gated_only_by(GANG_GATE))
        if self._pending.get(pod.key) == held:
            return
        self._pending[pod.key] = held
        self._table.members_changed(ref.key)
        if not ref.solo and not held:
            self._work.put(("plan", ref))

    def _podgang(self, event_type: EventType, podgang: PodGang) -> None:
        ref = GangRef(podgang.metadata.namespace, podgang.metadata.name)
        if event_type == "DELETED":
            self._specs.pop(ref.key, None)
            self._forget(ref, f"PodGang {ref.key} was deleted")
            return
        if self._specs.get(ref.key) == podgang.spec:
            return
        self._specs[ref.key] = podgang.spec
        self._table.members_changed(ref.key)
        self._work.put(("plan", ref))

    def _node(self, event_type: EventType, node: Node) -> None:
        if event_type == "DELETED":
            self._nodes.pop(node.name, None)
            self._table.capacity_freed()
            return
        fingerprint = _fingerprint(node)
        if self._nodes.get(node.name) != fingerprint:
            self._nodes[node.name] = fingerprint
            self._table.capacity_freed()

    def _forget(self, ref: GangRef, reason: str) -> None:
        ready = self._table.forget(ref.key)
        self._waiters.answer(ready, f"{reason}; nothing more is bound for it")
