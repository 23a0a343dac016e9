"""The fake API in process, for the simulation: the one in-memory store (``scheduler.kube.memory``, the same the
HTTP server serves), typed views of its Nodes, Pods and PodGangs, the ``pods/binding`` write with injectable
faults, and watches that deliver every change to their subscribers a moment later (as an informer would).

It accepts any binding the way kube-apiserver does (it checks UID and that the pod is unbound and ungated, not
capacity), and records every node it leaves overcommitted: that is the property the gang lifecycle must never
break. Objects are stamped with the simulated clock, and UIDs are counted, so a run is reproducible.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from api.core import Node, Pod
from api.grove import PodGang
from scheduler.extender.cluster_writer import RecordedEvent
from scheduler.kube.errors import WriteError
from scheduler.kube.memory.resources import NODES, PODGANGS, PODS, StatusError
from scheduler.kube.memory.store import Entry, Store
from scheduler.kube.nominations import Nomination

__all__ = ["BindFault", "FakeApi", "Subscription", "Watcher"]

Kind = Literal["Node", "Pod", "PodGang"]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]
Watcher = Callable[[Kind, EventType, Any], None]

BindFault = Literal["delete", "recreate", "conflict", "unavailable", "timeout"]
"""What happens to a binding of a pod marked faulty: ``delete`` the pod first (404), ``recreate`` it under a new UID
first (409 on the old UID), answer ``conflict`` (409), ``unavailable`` (503) or ``timeout`` (no answer)."""

_KINDS: dict[str, Kind] = {NODES: "Node", PODS: "Pod", PODGANGS: "PodGang"}
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)  # simulated second 0


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


class FakeApi:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        uids = itertools.count()
        # No history: its watches are fed as changes happen (``listen``) and never resume from a resourceVersion.
        self.store = Store(
            clock=lambda: _EPOCH + timedelta(seconds=loop.time()), uids=lambda: f"uid-{next(uids)}", history=0
        )
        # What the store holds, decoded once per change (every watcher and reader shares these).
        self.nodes: dict[str, Node] = {}
        self.pods: dict[str, Pod] = {}
        self.podgangs: dict[str, PodGang] = {}
        self.allocatable: dict[str, dict[str, int]] = {}
        self.used: dict[str, dict[str, int]] = {}
        self.faults: dict[str, list[BindFault]] = {}  # pod → faults to apply, one per bind
        self.status_failures = 0  # the next this many PodGang status/event writes fail (503)
        self.overcommits: list[str] = []
        self.statuses: list[tuple[str, dict[str, Any]]] = []
        self.nominations: list[Nomination] = []  # recorded only: the stand-in kube-scheduler reads no nomination
        self.evictions: list[str] = []  # pods evicted through the Eviction API, in order
        self.events: list[RecordedEvent] = []
        self.binds = 0
        self.on_bind: Callable[[str], None] | None = None  # called after each successful binding (fault injection)
        self.on_pod_deleted: Callable[[Pod], None] | None = None  # e.g. Grove re-creating a member
        self._subscriptions: list[Subscription] = []
        self.store.listen(self._changed)

    # --- watches -------------------------------------------------------------------------------------------------

    def watch(self, watcher: Watcher, *, lag: float = 0.0) -> Subscription:
        subscription = Subscription(watcher, lag, self.loop)
        self._subscriptions.append(subscription)
        return subscription

    def unwatch(self, subscription: Subscription) -> None:
        subscription.active = False
        self._subscriptions = [s for s in self._subscriptions if s is not subscription]

    def _changed(self, entry: Entry) -> None:
        """Every change the store logs: the typed views, the capacity bookkeeping, then each watch."""
        kind = _KINDS.get(entry.resource)
        if kind is None or entry.type not in ("ADDED", "MODIFIED", "DELETED"):
            return
        event_type: EventType = entry.type  # type: ignore[assignment]
        meta = entry.obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        views: dict[str, Any] = {"Node": self.nodes, "Pod": self.pods, "PodGang": self.podgangs}[kind]
        before = views.get(key)
        if event_type == "DELETED":
            obj = views.pop(key, None)
            if obj is None:
                return
        else:
            obj = _bound(before, entry) or {"Node": Node, "Pod": Pod, "PodGang": PodGang}[kind].model_validate(
                entry.obj
            )
            views[key] = obj
        if kind == "Node" and event_type != "DELETED":
            self.allocatable[key] = obj.allocatable()
            self.used.setdefault(key, {})
        elif kind == "Pod":
            was = before.spec.nodeName if before is not None else ""
            now = obj.spec.nodeName if event_type != "DELETED" else ""
            if was != now:
                if was:
                    self._use(before, was, -1)
                if now:
                    self._use(obj, now, 1)
        for subscription in list(self._subscriptions):
            subscription.send(kind, event_type, obj)

    # --- objects -------------------------------------------------------------------------------------------------

    def add_node(self, node: dict[str, Any]) -> None:
        self.store.save(NODES, node)  # a registered Node, status and all

    def touch_node(self, name: str) -> None:
        """A Node status heartbeat: a cluster event that changes nothing kube-scheduler counts."""
        with self.store.cond:
            heartbeat = self.store.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
            status = {"conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": heartbeat}]}
            self.store.patch(NODES, self.store.find(NODES, "", name), {"status": status}, subresource="status")

    def add_podgang(self, podgang: dict[str, Any]) -> None:
        self.store.create(PODGANGS, podgang["metadata"]["namespace"], podgang)

    def create_pod(self, pod: dict[str, Any]) -> Pod:
        stored = self.store.create(PODS, pod["metadata"]["namespace"], pod)
        return self.pods[f"{stored['metadata']['namespace']}/{stored['metadata']['name']}"]

    def delete_pod(self, key: str) -> Pod | None:
        pod = self.pods.get(key)
        if pod is None:
            return None
        with self.store.cond:
            self.store.delete(PODS, self.store.find(PODS, *key.split("/", 1)), propagation=None)
        if self.on_pod_deleted is not None:
            self.on_pod_deleted(pod)
        return pod

    def recreate_pod(self, key: str) -> Pod | None:
        """Delete and create again under a new UID (what a controller does with a lost pod)."""
        old = self.store.objects.get(PODS, {}).get(tuple(key.split("/", 1)))  # type: ignore[arg-type]
        if old is None:
            return None
        self.delete_pod(key)
        return self.create_pod({**old, "metadata": dict(old["metadata"]), "spec": {**old["spec"], "nodeName": ""}})

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
        binding = {"kind": "Binding", "metadata": {"name": name, "uid": uid}, "target": {"kind": "Node", "name": node}}
        try:
            with self.store.cond:
                self.store.bind(self.store.find(PODS, namespace, name), binding)
        except StatusError as err:
            raise WriteError(err.message, status=err.code) from None
        self.binds += 1
        if self.on_bind is not None:
            self.on_bind(key)

    def patch_podgang_status(self, *, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._maybe_fail(f"status of PodGang {namespace}/{name}")
        self.statuses.append((f"{namespace}/{name}", status))
        try:
            with self.store.cond:
                current = self.store.find(PODGANGS, namespace, name)
                self.store.patch(PODGANGS, current, {"status": status}, subresource="status")
        except StatusError as err:
            raise WriteError(err.message, status=err.code) from None

    def nominate(self, nomination: Nomination) -> None:
        self._maybe_fail(f"nomination of pod {nomination.key}")
        self.nominations.append(nomination)

    def evict(self, *, namespace: str, name: str, uid: str, dry_run: bool = False) -> None:
        """The Eviction API with a kubelet that stops containers at once: the pod is deleted (no grace period to
        wait out in a simulation); 404 for a pod that is gone, 409 for one re-created under another UID."""
        key = f"{namespace}/{name}"
        pod = self.pods.get(key)
        if pod is None:
            raise WriteError(f'pods "{name}" not found in namespace {namespace}', status=404)
        if uid and pod.metadata.uid != uid:
            raise WriteError(f"pod {key}: precondition failed: UID {uid}, found {pod.metadata.uid}", status=409)
        if not dry_run:
            self.evictions.append(key)
            self.delete_pod(key)

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


def _bound(before: Any, entry: Entry) -> Pod | None:
    """The decoded pod after a change of ``spec.nodeName`` alone (a binding: half the writes of a run), made from
    the one before it without decoding it again; None for any other change."""
    if not isinstance(before, Pod) or entry.old is None:
        return None
    new, old = entry.obj, entry.old
    node = new["spec"].get("nodeName", "")
    unchanged = (
        new.keys() == old.keys()
        and all(new[k] is old[k] for k in new if k not in ("metadata", "spec"))
        and new["spec"] == {**old["spec"], "nodeName": node}
        and {**new["metadata"], "resourceVersion": "", "generation": 0}
        == {**old["metadata"], "resourceVersion": "", "generation": 0}
    )
    if not unchanged:
        return None
    return before.model_copy(
        update={
            "metadata": before.metadata.model_copy(update={"resourceVersion": new["metadata"]["resourceVersion"]}),
            "spec": before.spec.model_copy(update={"nodeName": node}),
        }
    )
