"""The API server of the simulation: Nodes, Pods and PodGangs, the ``pods/binding`` write with injectable faults,
and watches that deliver every change to their subscribers a moment later (as an informer would).

It accepts any binding the way kube-apiserver does (it checks UID and that the pod is unbound, not capacity), and
records every node it leaves overcommitted: that is the property the gang lifecycle must never break.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from api.core import Node, Pod
from api.grove import PodGang
from scheduler.extender.cluster_writer import RecordedEvent
from scheduler.kube.errors import WriteError

__all__ = ["BindFault", "FakeApi", "Subscription", "Watcher"]

Kind = Literal["Node", "Pod", "PodGang"]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Watcher = Callable[[Kind, EventType, Any], None]

BindFault = Literal["delete", "recreate", "conflict", "unavailable", "timeout"]
"""What happens to a binding of a pod marked faulty: ``delete`` the pod first (404), ``recreate`` it under a new UID
first (409 on the old UID), answer ``conflict`` (409), ``unavailable`` (503) or ``timeout`` (no answer)."""


@dataclass
class Subscription:
    """One watch: events reach the watcher ``lag`` seconds after they happened, in the order they happened
    (timers due at the same instant are not ordered by asyncio, so they go through one queue per watch)."""

    watcher: Watcher
    lag: float
    loop: asyncio.AbstractEventLoop
    active: bool = True
    pending: deque[tuple[float, Kind, EventType, Any]] = field(default_factory=deque)
    draining: bool = False

    def send(self, kind: Kind, event_type: EventType, obj: Any) -> None:
        self.pending.append((self.loop.time() + self.lag, kind, event_type, obj))
        if not self.draining:
            self.draining = True
            self.loop.call_at(self.pending[0][0], self._drain)

    def _drain(self) -> None:
        now = self.loop.time()
        while self.pending and self.pending[0][0] <= now + 1e-9:
            _, kind, event_type, obj = self.pending.popleft()
            if self.active:
                self.watcher(kind, event_type, obj)
        if self.pending:
            self.loop.call_at(self.pending[0][0], self._drain)
        else:
            self.draining = False


@dataclass
class FakeApi:
    loop: asyncio.AbstractEventLoop
    nodes: dict[str, Node] = field(default_factory=dict)
    pods: dict[str, Pod] = field(default_factory=dict)
    podgangs: dict[str, PodGang] = field(default_factory=dict)
    allocatable: dict[str, dict[str, int]] = field(default_factory=dict)
    used: dict[str, dict[str, int]] = field(default_factory=dict)
    faults: dict[str, list[BindFault]] = field(default_factory=dict)  # pod → faults to apply, one per bind
    status_failures: int = 0  # the next this many PodGang status/event writes fail (503)
    overcommits: list[str] = field(default_factory=list)
    statuses: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    events: list[RecordedEvent] = field(default_factory=list)
    binds: int = 0
    on_bind: Callable[[str], None] | None = None  # called after each successful binding (fault injection)
    on_pod_deleted: Callable[[Pod], None] | None = None  # e.g. Grove re-creating a member
    _subscriptions: list[Subscription] = field(default_factory=list)
    _uids: itertools.count[int] = field(default_factory=itertools.count)

    # --- watches -------------------------------------------------------------------------------------------------

    def watch(self, watcher: Watcher, *, lag: float = 0.0) -> Subscription:
        subscription = Subscription(watcher, lag, self.loop)
        self._subscriptions.append(subscription)
        return subscription

    def unwatch(self, subscription: Subscription) -> None:
        subscription.active = False
        self._subscriptions = [s for s in self._subscriptions if s is not subscription]

    def _emit(self, kind: Kind, event_type: EventType, obj: Any) -> None:
        for subscription in list(self._subscriptions):
            subscription.send(kind, event_type, obj)

    # --- objects -------------------------------------------------------------------------------------------------

    def add_node(self, node: Node) -> None:
        self.nodes[node.name] = node
        self.allocatable[node.name] = node.allocatable()
        self.used.setdefault(node.name, {})
        self._emit("Node", "ADDED", node)

    def add_podgang(self, podgang: PodGang) -> None:
        self.podgangs[podgang.key] = podgang
        self._emit("PodGang", "ADDED", podgang)

    def update_podgang(self, podgang: PodGang) -> None:
        self.podgangs[podgang.key] = podgang
        self._emit("PodGang", "MODIFIED", podgang)

    def create_pod(self, pod: Pod) -> Pod:
        if not pod.metadata.uid:
            pod = pod.model_copy(update={"metadata": pod.metadata.model_copy(update={"uid": self._new_uid()})})
        self.pods[pod.key] = pod
        if pod.spec.nodeName:
            self._use(pod, pod.spec.nodeName, 1)
        self._emit("Pod", "ADDED", pod)
        return pod

    def delete_pod(self, key: str) -> Pod | None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return None
        if pod.spec.nodeName:
            self._use(pod, pod.spec.nodeName, -1)
        self._emit("Pod", "DELETED", pod)
        if self.on_pod_deleted is not None:
            self.on_pod_deleted(pod)
        return pod

    def recreate_pod(self, key: str) -> Pod | None:
        """Delete and create again under a new UID (what a controller does with a lost pod)."""
        old = self.pods.get(key)
        if old is None:
            return None
        self.delete_pod(key)
        fresh = old.model_copy(
            update={
                "metadata": old.metadata.model_copy(update={"uid": self._new_uid()}),
                "spec": old.spec.model_copy(update={"nodeName": ""}),
            }
        )
        return self.create_pod(fresh)

    # --- writes (the extender's ClusterWriter goes through these) -------------------------------------------------

    def bind(self, *, namespace: str, name: str, uid: str, node: str) -> None:
        key = f"{namespace}/{name}"
        fault = self.faults[key].pop(0) if self.faults.get(key) else None
        if fault == "delete":
            self.delete_pod(key)
        elif fault == "recreate":
            self.recreate_pod(key)
        elif fault == "conflict":
            raise WriteError(f"binding {key}: conflict (simulated)", status=409)
        elif fault == "unavailable":
            raise WriteError(f"binding {key}: API server unavailable (simulated)", status=503)
        elif fault == "timeout":
            raise WriteError(f"binding {key}: the API server did not answer (simulated)")
        pod = self.pods.get(key)
        if pod is None:
            raise WriteError(f'pods "{name}" not found', status=404)
        if uid and pod.metadata.uid != uid:
            raise WriteError(f"binding {key}: precondition failed: UID {uid}, found {pod.metadata.uid}", status=409)
        if pod.spec.nodeName:
            raise WriteError(f'pod {key} is already assigned to node "{pod.spec.nodeName}"', status=409)
        if node not in self.nodes:
            raise WriteError(f'node "{node}" not found', status=404)
        bound = pod.model_copy(update={"spec": pod.spec.model_copy(update={"nodeName": node})})
        self.pods[key] = bound
        self._use(bound, node, 1)
        self.binds += 1
        self._emit("Pod", "MODIFIED", bound)
        if self.on_bind is not None:
            self.on_bind(key)

    def patch_podgang_status(self, *, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._maybe_fail(f"status of PodGang {namespace}/{name}")
        key = f"{namespace}/{name}"
        self.statuses.append((key, status))
        gang = self.podgangs.get(key)
        if gang is None:
            raise WriteError(f"PodGang {key} not found", status=404)
        merged = {**(gang.status.to_json_dict() if gang.status else {}), **status}
        self.update_podgang(PodGang.model_validate({**gang.to_json_dict(), "status": merged}))

    def record_event(self, *, namespace: str, kind: str, name: str, uid: str, reason: str, message: str,
                     type: Literal["Normal", "Warning"] = "Normal") -> None:  # fmt: skip
        self._maybe_fail(f"event on {kind} {namespace}/{name}")
        self.events.append(RecordedEvent(namespace=namespace, kind=kind, name=name, reason=reason, message=message,
                                         type=type))  # fmt: skip

    # --- internals -----------------------------------------------------------------------------------------------

    def _maybe_fail(self, what: str) -> None:
        if self.status_failures > 0:
            self.status_failures -= 1
            raise WriteError(f"{what}: API server unavailable (simulated)", status=503)

    def _use(self, pod: Pod, node: str, sign: int) -> None:
        used = self.used.setdefault(node, {})
        for resource, amount in pod.requests().items():
            used[resource] = used.get(resource, 0) + sign * amount
        if sign > 0:
            allocatable = self.allocatable.get(node, {})
            over = {r: u for r, u in used.items() if u > allocatable.get(r, 0)}
            if over:
                self.overcommits.append(f"{node} overcommitted by binding {pod.key}: {over}")

    def _new_uid(self) -> str:
        return f"uid-{next(self._uids)}"
