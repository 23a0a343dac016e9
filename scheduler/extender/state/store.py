"""``ClusterStore``: the extender's mirror of the API server's Nodes, Pods, PodGangs, PriorityClasses and
PodDisruptionBudgets.

Writers are the watch threads (or a snapshot load) calling ``replace``/``apply``; readers are the coordinator on the
event loop and in planning threads. One lock guards every map; objects are never mutated in place (a change is a
new object), so a reader may keep what it got after the lock is released.

Pods are kept whole only when they are ours (``foreign.OurPods``); a pod of another scheduler is kept as a
``ForeignPod`` (its capacity), whether it arrives so (the watch decodes it so) or as a ``Pod`` (a snapshot), and
listeners hear it as that ``ForeignPod``. ``pod``/``pods``/``pod_by_uid`` see our pods only; ``used_on`` counts
every pod.

Besides the objects it keeps the indexes the hot path needs (``pod_index``) and, per Node, its parsed allocatable
and its shape (what placement reads of it).
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from api.core import Node, Pod, PriorityClass, ResourceVector
from api.grove import PodGang
from api.policy import PodDisruptionBudget
from scheduler.extender.state.pod_index import PodIndex
from scheduler.kube.foreign import ForeignPod, OurPods

__all__ = ["ClusterStore", "EventType", "Kind", "NodeShape", "StoreListener", "Stored", "node_shape"]

Kind = Literal["Node", "Pod", "PodGang", "PriorityClass", "PodDisruptionBudget"]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
StoreListener = Callable[[Kind, EventType, object], None]
Stored = Node | Pod | ForeignPod | PodGang | PriorityClass | PodDisruptionBudget

log = logging.getLogger(__name__)


NodeShape = tuple[object, ...]


def node_shape(node: Node, allocatable: ResourceVector) -> NodeShape:
    """What placement reads of a Node: labels (topology, selectors), allocatable, schedulability and taints.
    Kubelets rewrite their Node every few seconds (heartbeats in ``status.conditions``) without touching any of
    it, so only a change here may invalidate a topology built from the nodes."""
    return (
        tuple(sorted(node.metadata.labels.items())),
        tuple(sorted(allocatable.items())),
        node.spec.unschedulable,
        tuple((t.key, t.value, t.effect) for t in node.spec.taints),
    )


class ClusterStore:
    """Thread-safe mirror of the cluster. ``version`` grows on every change; listeners hear every change after it
    is visible to readers, on the writer's thread, and must return quickly (enqueue, do not work)."""

    def __init__(self, *, ours: OurPods | None = None) -> None:
        self._ours = ours or OurPods()
        self._lock = threading.RLock()
        self._nodes: dict[str, Node] = {}
        self._pods = PodIndex()
        self._gangs: dict[str, PodGang] = {}
        self._classes: dict[str, PriorityClass] = {}
        self._budgets: dict[str, PodDisruptionBudget] = {}
        self._allocatable: dict[str, ResourceVector] = {}
        self._shapes: dict[str, NodeShape] = {}
        # Per node, allocatable less what bound pods use, as it is (over-committed: negative) and floored at zero,
        # kept node by node as pods and Nodes change: every plan starts from it, and rebuilding it over every node
        # per plan was most of a plan's cost on a large cluster (bench_e2e --grove-flow's planner thread).
        self._left: dict[str, ResourceVector] = {}
        self._free: dict[str, ResourceVector] = {}
        self._listeners: list[StoreListener] = []
        self._version = 0
        self._node_version = 0
        self._podgang_version = 0
        self._synced = False
        # watch events applied, by kind
        self._events: dict[str, int] = {"Node": 0, "Pod": 0, "PodGang": 0, "PriorityClass": 0, "PodDisruptionBudget": 0}

    # --- writes ------------------------------------------------------------------------------------------------

    def replace(self, kind: Kind, objects: Sequence[Stored]) -> None:
        """Install the result of a (re)list: afterwards ``kind`` holds exactly ``objects``."""
        events: list[tuple[EventType, object]] = []
        with self._lock:
            incoming = {self._key(obj): self._kept(obj) for obj in objects}
            for key in [k for k in self._keys(kind) if k not in incoming]:
                events.append(("DELETED", self._remove(kind, key)))
            for key, obj in incoming.items():
                events.append(("MODIFIED" if self._has(kind, key) else "ADDED", obj))
                self._upsert(key, obj)
        for event_type, changed in events:
            self._notify(kind, event_type, changed)

    def apply(self, kind: Kind, event_type: EventType, obj: Stored) -> None:
        """Apply one watch event. A DELETED for an unknown object and an ADDED for a known one are both fine
        (watches replay after a relist)."""
        key = self._key(obj)
        obj = self._kept(obj)
        with self._lock:
            self._events[kind] += 1
            if event_type == "DELETED":
                if not self._has(kind, key):
                    return
                self._remove(kind, key)
            else:
                self._upsert(key, obj)
        self._notify(kind, event_type, obj)

    def keeps_whole(self, *, labels: Mapping[str, str] | None, scheduler_name: str) -> bool:
        """Whether a pod with these labels and ``schedulerName`` is kept as a ``Pod`` (else as a ``ForeignPod``):
        a watch decodes only what the store will keep."""
        return self._ours.include(labels=labels, scheduler_name=scheduler_name)

    def offered(self, pod: Pod) -> bool:
        """Whether our kube-scheduler profile offers ``pod`` to the extender (``OurPods.offered``)."""
        return self._ours.offered(pod)

    def gang_offered(self, gang: str) -> bool:
        """Whether our profile offers any pod of the PodGang ``gang`` (namespace/name): only such a gang is worth
        planning ahead; one whose pods another scheduler places must not hold capacity ours could use."""
        return any(self._ours.offered(pod) for pod in self.pods_of_gang(gang))

    def mark_synced(self) -> None:
        """Every kind has been listed once: the mirror is complete enough to plan on."""
        with self._lock:
            self._synced = True
        log.info(
            "cluster state synced nodes=%d pods=%d other_pods=%d podgangs=%d",
            len(self._nodes),
            len(self._pods.ours),
            len(self._pods.foreign),
            len(self._gangs),
        )

    def subscribe(self, callback: StoreListener) -> None:
        """Call ``callback(kind, event_type, obj)`` after every change, on the writer's thread."""
        with self._lock:
            self._listeners.append(callback)

    # --- reads -------------------------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return self._synced

    def events_applied(self) -> dict[str, int]:
        """Watch events applied so far, by kind (a relist's objects are not counted)."""
        with self._lock:
            return dict(self._events)

    @property
    def version(self) -> int:
        return self._version

    @property
    def placements(self) -> int:
        """Grows whenever a pod, ours or another scheduler's, starts holding a node's capacity (bound, or seen bound
        for the first time) or starts being deleted there: what a gang refused for room may now preempt."""
        return self._pods.placements

    @property
    def node_version(self) -> int:
        """Grows only when a Node appears, goes, or changes what placement reads of it (``node_shape``): a
        topology built at one node version stays valid until the next; a heartbeat does not move it."""
        return self._node_version

    @property
    def podgang_version(self) -> int:
        """Grows whenever a PodGang appears or goes, not when one changes (its status is written often): what is
        derived from which PodGangs exist and their names and creation times, fixed for an object's life, holds
        until it moves."""
        return self._podgang_version

    def nodes(self) -> list[Node]:
        with self._lock:
            return list(self._nodes.values())

    def versioned_nodes(self) -> tuple[int, list[Node]]:
        """``node_version`` and the Nodes, read together: whatever is derived from what placement reads of these
        Nodes holds as long as ``node_version`` stays the same."""
        with self._lock:
            return self._node_version, list(self._nodes.values())

    def node(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def pods(self) -> list[Pod]:
        """Our pods (``OurPods``); pods of other schedulers are only counted in ``used_on``."""
        with self._lock:
            return list(self._pods.ours.values())

    def pod(self, key: str) -> Pod | None:
        """One of our pods; ``None`` for a pod the store does not hold or holds as a ``ForeignPod``."""
        return self._pods.ours.get(key)

    def any_pod(self, key: str) -> Pod | ForeignPod | None:
        """The pod as the store keeps it, ours or another scheduler's."""
        with self._lock:
            return self._pods.get(key)

    def lowest_foreign_priority(self) -> int | None:
        """The lowest ``spec.priority`` among other schedulers' pods holding capacity (None: there are none): kept as
        pods come and go, so the preemption sweep need not read every pod of the cluster each second."""
        with self._lock:
            return min(self._pods.foreign_priorities, default=None)

    def foreign_pods(self) -> list[ForeignPod]:
        with self._lock:
            return list(self._pods.foreign.values())

    def pod_by_uid(self, uid: str) -> Pod | None:
        """One of our pods by UID (a pod of another scheduler is never a gang member to protect)."""
        with self._lock:
            key = self._pods.by_uid.get(uid)
            return self._pods.ours.get(key) if key else None

    def podgangs(self) -> list[PodGang]:
        with self._lock:
            return list(self._gangs.values())

    def podgang_keys(self) -> list[str]:
        with self._lock:
            return list(self._gangs)

    def podgang(self, key: str) -> PodGang | None:
        return self._gangs.get(key)

    def priority_class(self, name: str) -> PriorityClass | None:
        return self._classes.get(name)

    def default_priority_class(self) -> PriorityClass | None:
        """The class marked ``globalDefault`` (the API server admits at most one; of several, the lowest value,
        as its admission plugin picks)."""
        with self._lock:
            defaults = [c for c in self._classes.values() if c.globalDefault]
        return min(defaults, key=lambda c: (c.value, c.name), default=None)

    def disruption_budgets(self, namespace: str) -> list[PodDisruptionBudget]:
        """The namespace's PodDisruptionBudgets (what evicting its pods may disrupt)."""
        with self._lock:
            return [b for b in self._budgets.values() if b.metadata.namespace == namespace]

    def pods_of_gang(self, gang_key: str) -> list[Pod]:
        """Pods labelled ``grove.io/podgang=<gang>`` in the gang's namespace (whether or not the PodGang lists them)."""
        with self._lock:
            return [self._pods.ours[key] for key in self._pods.by_gang.get(gang_key, ())]

    def attempted(self, key: str) -> None:
        """kube-scheduler has just offered our pod ``key``: if this attempt fails, it queues the pod again behind
        every pod queued before now."""
        with self._lock:
            self._pods.attempted(key)

    def in_queue_order(self, keys: Iterable[str]) -> list[str]:
        """``keys`` (our pods) in the order kube-scheduler will pop them, as far as the store can tell (pods of one
        priority, by when each was added to its queue: on its first event, or again after its last attempt); keys
        of pods not held last."""
        with self._lock:
            queued = self._pods.queued
            return sorted(keys, key=lambda key: queued.get(key, sys.maxsize))

    def requests_of(self, pod: Pod) -> ResourceVector:
        """The pod's summed requests; cached for pods in the store, computed for others."""
        cached = self._pods.requests.get(pod.key)
        stored = self._pods.ours.get(pod.key)
        if cached is not None and stored is pod:
            return cached
        return pod.requests()

    def allocatable_of(self, node: str) -> ResourceVector:
        """The node's allocatable units, parsed once per node change (empty for an unknown node)."""
        return self._allocatable.get(node, {})

    def used_on(self, node: str) -> ResourceVector:
        """Units held on ``node`` by bound, non-terminal pods."""
        with self._lock:
            return dict(self._pods.used.get(node, {}))

    def capacity(self) -> tuple[dict[str, ResourceVector], dict[str, ResourceVector]]:
        """Per node what bound pods leave of its allocatable: as it is (negative where a node is over-committed),
        and floored at zero; only the resources the node has. Read together; the vectors are the store's own (a
        change replaces a node's vector, never changes it): read them, do not modify them."""
        with self._lock:
            return dict(self._left), dict(self._free)

    # --- internals ---------------------------------------------------------------------------------------------

    @staticmethod
    def _key(obj: Stored) -> str:
        if isinstance(obj, Node | PriorityClass):
            return obj.name
        return obj.key

    def _kept(self, obj: Stored) -> Stored:
        """What the store keeps of ``obj``: a pod of another scheduler as its capacity."""
        if isinstance(obj, Pod) and not self._ours.include_pod(obj):
            return ForeignPod.of(obj, obj.requests())
        return obj

    def _keys(self, kind: Kind) -> list[str]:
        if kind == "Node":
            return list(self._nodes)
        if kind == "Pod":
            return self._pods.keys()
        if kind == "PriorityClass":
            return list(self._classes)
        if kind == "PodDisruptionBudget":
            return list(self._budgets)
        return list(self._gangs)

    def _has(self, kind: Kind, key: str) -> bool:
        if kind == "Node":
            return key in self._nodes
        if kind == "Pod":
            return key in self._pods
        if kind == "PriorityClass":
            return key in self._classes
        if kind == "PodDisruptionBudget":
            return key in self._budgets
        return key in self._gangs

    def _upsert(self, key: str, obj: Stored) -> None:
        self._version += 1
        if isinstance(obj, Pod | ForeignPod):
            self._pods.put(key, obj)
            self._refresh_left()
        elif isinstance(obj, Node):
            allocatable = obj.allocatable()
            shape = node_shape(obj, allocatable)
            if self._shapes.get(key) != shape:
                self._node_version += 1
                self._shapes[key] = shape
                self._allocatable[key] = allocatable
                self._pods.touched.add(key)
                self._refresh_left()
            self._nodes[key] = obj
        elif isinstance(obj, PriorityClass):
            self._classes[key] = obj
        elif isinstance(obj, PodDisruptionBudget):
            self._budgets[key] = obj
        else:
            before = self._gangs.get(key)
            if before is None or before.metadata.creationTimestamp != obj.metadata.creationTimestamp:
                self._podgang_version += 1  # a new one (or, seen on a relist, one deleted and made again)
            self._gangs[key] = obj

    def _remove(self, kind: Kind, key: str) -> object:
        self._version += 1
        if kind == "Pod":
            pod = self._pods.pop(key)
            self._refresh_left()
            return pod
        if kind == "Node":
            self._node_version += 1
            self._allocatable.pop(key, None)
            self._shapes.pop(key, None)
            self._pods.touched.add(key)
            self._refresh_left()
            return self._nodes.pop(key)
        if kind == "PriorityClass":
            return self._classes.pop(key)
        if kind == "PodDisruptionBudget":
            return self._budgets.pop(key)
        self._podgang_version += 1
        return self._gangs.pop(key)

    def _refresh_left(self) -> None:
        """``_left`` and ``_free`` anew for the nodes whose pods or allocatable changed (a pod on a node the store
        has no Node for leaves nothing to place on)."""
        touched, self._pods.touched = self._pods.touched, set()
        for node in touched:
            allocatable = self._allocatable.get(node)
            if allocatable is None:
                self._left.pop(node, None)
                self._free.pop(node, None)
                continue
            used = self._pods.used.get(node)
            left = {name: units - used.get(name, 0) for name, units in allocatable.items()} if used else allocatable
            self._left[node] = left
            negative = any(units < 0 for units in left.values())
            self._free[node] = {name: max(0, units) for name, units in left.items()} if negative else left

    def _notify(self, kind: Kind, event_type: EventType, obj: object) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, event_type, obj)
            except Exception:
                # A broken listener must not stop the watch that feeds everyone else.
                log.exception("store listener failed kind=%s event=%s", kind, event_type)
