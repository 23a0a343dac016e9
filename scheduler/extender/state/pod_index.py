"""``PodIndex``: the store's pods and the indexes the hot path reads — our pods by key, UID and gang, each pod's
summed requests (parsing quantities on every filter would cost more than the rest of the call) and the capacity
every bound pod, ours or not, holds on its node.

Not thread-safe on its own: ``ClusterStore`` calls it under its lock.
"""

from __future__ import annotations

import itertools

from api.core import Pod, ResourceVector
from api.grove import LABEL_PODGANG
from scheduler.kube.foreign import ForeignPod

__all__ = ["PodIndex"]


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


def _deleting(pod: Pod | ForeignPod) -> bool:
    return pod.deleting


def _node_held(pod: Pod | ForeignPod) -> str:
    """The node whose capacity the pod holds ("" when it holds none: pending or finished)."""
    if pod.terminal:
        return ""
    return pod.node if isinstance(pod, ForeignPod) else pod.spec.nodeName


class PodIndex:
    def __init__(self) -> None:
        self.ours: dict[str, Pod] = {}
        self.foreign: dict[str, ForeignPod] = {}
        self.by_uid: dict[str, str] = {}  # our pods only: preempt's victims are looked up to protect gangs
        self.by_gang: dict[str, set[str]] = {}
        self.requests: dict[str, ResourceVector] = {}  # our pods; a ForeignPod carries its own
        self.used: dict[str, ResourceVector] = {}
        self.touched: set[str] = set()  # nodes whose ``used`` changed since the store last drained this
        self.placements = 0  # grows whenever a pod starts holding a node's capacity, or a held pod changes
        self.foreign_priorities: dict[int, int] = {}  # priority → other schedulers' pods holding capacity with it
        # Our pods → when kube-scheduler last queued them, as far as we can tell: when the pod's first event came (its
        # informer adds it then), or when it was last offered to us (a failed attempt queues it again, stamped then).
        # kube-scheduler pops pods of one priority in that order.
        self.queued: dict[str, int] = {}
        self._ticks = itertools.count()

    def __contains__(self, key: str) -> bool:
        return key in self.ours or key in self.foreign

    def keys(self) -> list[str]:
        return [*self.ours, *self.foreign]

    def get(self, key: str) -> Pod | ForeignPod | None:
        pod = self.ours.get(key)
        return pod if pod is not None else self.foreign.get(key)

    def put(self, key: str, pod: Pod | ForeignPod) -> None:
        old = self.get(key)
        reuse = None
        if isinstance(old, Pod) and isinstance(pod, Pod) and _same_resources(old, pod):
            reuse = self.requests.get(key)
        if old is not None:
            self._unindex(key, old)
        if not isinstance(pod, Pod):
            self.queued.pop(key, None)
        elif not isinstance(old, Pod) or old.metadata.uid != pod.metadata.uid:
            self.queued[key] = next(self._ticks)  # a new pod, or one made again under the same name
        if _node_held(pod) and (old is None or _node_held(old) != _node_held(pod) or _deleting(old) != _deleting(pod)):
            self.placements += 1
        self._index(key, pod, requests=reuse)

    def pop(self, key: str) -> Pod | ForeignPod:
        pod = self.get(key)
        if pod is None:
            raise KeyError(key)
        self._unindex(key, pod)
        self.queued.pop(key, None)
        return pod

    def attempted(self, key: str) -> None:
        if key in self.queued:
            self.queued[key] = next(self._ticks)

    def _index(self, key: str, pod: Pod | ForeignPod, *, requests: ResourceVector | None) -> None:
        if isinstance(pod, ForeignPod):
            self.foreign[key] = pod
            requests = pod.requests
        else:
            self.ours[key] = pod
            requests = requests if requests is not None else pod.requests()
            self.requests[key] = requests
            if pod.metadata.uid:
                self.by_uid[pod.metadata.uid] = key
            gang = _gang_key_of(pod)
            if gang:
                self.by_gang.setdefault(gang, set()).add(key)
        node = _node_held(pod)
        if node:
            self.touched.add(node)
            used = self.used.setdefault(node, {})
            for name, amount in requests.items():
                used[name] = used.get(name, 0) + amount
            if isinstance(pod, ForeignPod):
                self.foreign_priorities[pod.priority] = self.foreign_priorities.get(pod.priority, 0) + 1

    def _unindex(self, key: str, pod: Pod | ForeignPod) -> None:
        if isinstance(pod, ForeignPod):
            del self.foreign[key]
            requests = pod.requests
        else:
            del self.ours[key]
            requests = self.requests.pop(key, {})
            if pod.metadata.uid and self.by_uid.get(pod.metadata.uid) == key:
                del self.by_uid[pod.metadata.uid]
            gang = _gang_key_of(pod)
            if gang and gang in self.by_gang:
                self.by_gang[gang].discard(key)
                if not self.by_gang[gang]:
                    del self.by_gang[gang]
        node = _node_held(pod)
        if node and isinstance(pod, ForeignPod):
            left = self.foreign_priorities.get(pod.priority, 0) - 1
            if left > 0:
                self.foreign_priorities[pod.priority] = left
            else:
                self.foreign_priorities.pop(pod.priority, None)
        if node:
            self.touched.add(node)
            used = self.used.get(node, {})
            for name, amount in requests.items():
                left = used.get(name, 0) - amount
                if left:
                    used[name] = left
                else:
                    used.pop(name, None)
