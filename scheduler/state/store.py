"""``ClusterStore``: the extender's mirror of the API server's Nodes, Pods and PodGangs.

Writers are the watch threads (or a snapshot load) calling ``replace``/``apply``; readers are the coordinator on the
event loop and in planning threads. One lock guards every map; objects are never mutated in place (a change is a
new object), so a reader may keep what it got after the lock is released.

Besides the objects it keeps the indexes the hot path needs: pods by UID (preempt sends UIDs), pods by gang
label, each pod's summed requests (parsing quantities on every filter would cost more than the rest of the call),
and the capacity bound pods use on each node.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

from api.grove import LABEL_PODGANG, PodGang
from api.kube import Node, Pod, ResourceVector

__all__ = ["ClusterStore", "EventType", "Kind", "NodeShape", "StoreListener", "node_shape"]

Kind = Literal["Node", "Pod", "PodGang"]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
StoreListener = Callable[[Kind, EventType, object], None]

log = logging.getLogger(__name__)


def _gang_key_of(pod: Pod) -> str | None:
    gang = pod.metadata.labels.get(LABEL_PODGANG)
    return f"{pod.metadata.namespace}/{gang}" if gang else None


def _same_resources(old: Pod, new: Pod) -> bool:
    """The new pod shares the old one's container objects (an in-memory bind copies only ``nodeName``)."""
    return (
        old.spec.containers is new.spec.containers
        and old.spec.initContainers is new.spec.initContainers
        and old.spec.overhead is new.spec.overhead
    )


def _holds_capacity(pod: Pod) -> bool:
    return bool(pod.spec.nodeName) and not pod.terminal


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

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._nodes: dict[str, Node] = {}
        self._pods: dict[str, Pod] = {}
        self._gangs: dict[str, PodGang] = {}
        self._uid_to_pod: dict[str, str] = {}
        self._gang_pods: dict[str, set[str]] = {}
        self._requests: dict[str, ResourceVector] = {}
        self._allocatable: dict[str, ResourceVector] = {}
        self._shapes: dict[str, NodeShape] = {}
        self._used: dict[str, ResourceVector] = {}
        self._listeners: list[StoreListener] = []
        self._version = 0
        self._node_version = 0
        self._synced = False

    # --- writes ------------------------------------------------------------------------------------------------

    def replace(self, kind: Kind, objects: Sequence[Node | Pod | PodGang]) -> None:
        """Install the result of a (re)list: afterwards ``kind`` holds exactly ``objects``."""
        events: list[tuple[EventType, object]] = []
        with self._lock:
            current = self._current(kind)
            incoming = {self._key(kind, obj): obj for obj in objects}
            for key in [k for k in current if k not in incoming]:
                events.append(("DELETED", self._remove(kind, key)))
            for key, obj in incoming.items():
                events.append(("MODIFIED" if key in current else "ADDED", obj))
                self._upsert(kind, key, obj)
        for event_type, changed in events:
            self._notify(kind, event_type, changed)

    def apply(self, kind: Kind, event_type: EventType, obj: Node | Pod | PodGang) -> None:
        """Apply one watch event. A DELETED for an unknown object and an ADDED for a known one are both fine
        (watches replay after a relist)."""
        key = self._key(kind, obj)
        with self._lock:
            if event_type == "DELETED":
                if key not in self._current(kind):
                    return
                self._remove(kind, key)
            else:
                self._upsert(kind, key, obj)
        self._notify(kind, event_type, obj)

    def mark_synced(self) -> None:
        """Every kind has been listed once: the mirror is complete enough to plan on."""
        with self._lock:
            self._synced = True
        log.info(
            "cluster state synced nodes=%d pods=%d podgangs=%d", len(self._nodes), len(self._pods), len(self._gangs)
        )

    def subscribe(self, callback: StoreListener) -> None:
        """Call ``callback(kind, event_type, obj)`` after every change, on the writer's thread."""
        with self._lock:
            self._listeners.append(callback)

    # --- reads -------------------------------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        return self._synced

    @property
    def version(self) -> int:
        return self._version

    @property
    def node_version(self) -> int:
        """Grows only when a Node appears, goes, or changes what placement reads of it (``node_shape``): a
        topology built at one node version stays valid until the next; a heartbeat does not move it."""
        return self._node_version

    def nodes(self) -> list[Node]:
        with self._lock:
            return list(self._nodes.values())

    def node(self, name: str) -> Node | None:
        return self._nodes.get(name)

    def pods(self) -> list[Pod]:
        with self._lock:
            return list(self._pods.values())

    def pod(self, key: str) -> Pod | None:
        return self._pods.get(key)

    def pod_by_uid(self, uid: str) -> Pod | None:
        with self._lock:
            key = self._uid_to_pod.get(uid)
            return self._pods.get(key) if key else None

    def podgangs(self) -> list[PodGang]:
        with self._lock:
            return list(self._gangs.values())

    def podgang(self, key: str) -> PodGang | None:
        return self._gangs.get(key)

    def pods_of_gang(self, gang_key: str) -> list[Pod]:
        """Pods labelled ``grove.io/podgang=<gang>`` in the gang's namespace (whether or not the PodGang lists them)."""
        with self._lock:
            return [self._pods[key] for key in self._gang_pods.get(gang_key, ())]

    def requests_of(self, pod: Pod) -> ResourceVector:
        """The pod's summed requests; cached for pods in the store, computed for others."""
        cached = self._requests.get(pod.key)
        stored = self._pods.get(pod.key)
        if cached is not None and stored is pod:
            return cached
        return pod.requests()

    def allocatable_of(self, node: str) -> ResourceVector:
        """The node's allocatable units, parsed once per node change (empty for an unknown node)."""
        return self._allocatable.get(node, {})

    def allocatable_by_node(self) -> dict[str, ResourceVector]:
        with self._lock:
            return {name: dict(vector) for name, vector in self._allocatable.items()}

    def used_on(self, node: str) -> ResourceVector:
        """Units held on ``node`` by bound, non-terminal pods."""
        with self._lock:
            return dict(self._used.get(node, {}))

    def used_by_node(self) -> dict[str, ResourceVector]:
        with self._lock:
            return {name: dict(vector) for name, vector in self._used.items()}

    # --- internals ---------------------------------------------------------------------------------------------

    @staticmethod
    def _key(kind: Kind, obj: Node | Pod | PodGang) -> str:
        if isinstance(obj, Node):
            return obj.name
        return obj.key

    def _current(self, kind: Kind) -> Mapping[str, object]:
        if kind == "Node":
            return self._nodes
        if kind == "Pod":
            return self._pods
        return self._gangs

    def _upsert(self, kind: Kind, key: str, obj: Node | Pod | PodGang) -> None:
        self._version += 1
        if isinstance(obj, Pod):
            old = self._pods.get(key)
            reuse = self._requests.get(key) if old is not None and _same_resources(old, obj) else None
            if old is not None:
                self._unindex_pod(old)
            self._pods[key] = obj
            self._index_pod(obj, requests=reuse)
        elif isinstance(obj, Node):
            allocatable = obj.allocatable()
            shape = node_shape(obj, allocatable)
            if self._shapes.get(key) != shape:
                self._node_version += 1
                self._shapes[key] = shape
                self._allocatable[key] = allocatable
            self._nodes[key] = obj
        else:
            self._gangs[key] = obj

    def _remove(self, kind: Kind, key: str) -> object:
        self._version += 1
        if kind == "Pod":
            pod = self._pods.pop(key)
            self._unindex_pod(pod)
            return pod
        if kind == "Node":
            self._node_version += 1
            self._allocatable.pop(key, None)
            self._shapes.pop(key, None)
            return self._nodes.pop(key)
        return self._gangs.pop(key)

    def _index_pod(self, pod: Pod, *, requests: ResourceVector | None = None) -> None:
        requests = requests if requests is not None else pod.requests()
        self._requests[pod.key] = requests
        if pod.metadata.uid:
            self._uid_to_pod[pod.metadata.uid] = pod.key
        gang = _gang_key_of(pod)
        if gang:
            self._gang_pods.setdefault(gang, set()).add(pod.key)
        if _holds_capacity(pod):
            used = self._used.setdefault(pod.spec.nodeName, {})
            for name, amount in requests.items():
                used[name] = used.get(name, 0) + amount

    def _unindex_pod(self, pod: Pod) -> None:
        requests = self._requests.pop(pod.key, {})
        if pod.metadata.uid and self._uid_to_pod.get(pod.metadata.uid) == pod.key:
            del self._uid_to_pod[pod.metadata.uid]
        gang = _gang_key_of(pod)
        if gang and gang in self._gang_pods:
            self._gang_pods[gang].discard(pod.key)
            if not self._gang_pods[gang]:
                del self._gang_pods[gang]
        if _holds_capacity(pod):
            used = self._used.get(pod.spec.nodeName, {})
            for name, amount in requests.items():
                left = used.get(name, 0) - amount
                if left:
                    used[name] = left
                else:
                    used.pop(name, None)

    def _notify(self, kind: Kind, event_type: EventType, obj: object) -> None:
        for listener in list(self._listeners):
            try:
                listener(kind, event_type, obj)
            except Exception:
                # A broken listener must not stop the watch that feeds everyone else.
                log.exception("store listener failed kind=%s event=%s", kind, event_type)
