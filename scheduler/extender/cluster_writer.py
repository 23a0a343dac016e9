"""Everything the extender writes to the cluster, behind one small interface.

``bind`` is a coroutine: the release awaits many at once on the event loop. Status, Event and eviction writes block:
the background worker makes them from its own thread. Nominations are started many at once and answered through a
callback, so that planning never waits for them. ``scheduler.kube.writer`` holds the real implementation;
``InMemoryClusterWriter`` serves the embedded (snapshot) mode and the tests.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from api.core import Pod
from scheduler.extender.state.store import ClusterStore
from scheduler.kube.errors import WriteError
from scheduler.kube.foreign import ForeignPod
from scheduler.kube.nominations import Nominated, Nomination, NotSent, Wanted

__all__ = [
    "Binding",
    "ClusterWriter",
    "Eviction",
    "InMemoryClusterWriter",
    "Nominated",
    "Nomination",
    "RecordedEvent",
]


class ClusterWriter(Protocol):
    """Writes to the API server. Every method either succeeds or raises ``WriteError``; none retries on its own (the
    caller decides, kube-scheduler retries failed binds).

    A writer whose ``bind`` never suspends (no I/O) may set a class attribute ``inline = True``: the release then
    binds a gang's members one after another, letting other requests in every few, instead of many at once.
    """

    async def bind(self, *, namespace: str, name: str, uid: str, node: str) -> None:
        """POST ``pods/{name}/binding`` placing the pod (by UID, so a re-created pod is never bound by mistake).
        Awaited on the event loop, many at once."""
        ...

    def patch_podgang_status(self, *, namespace: str, name: str, status: dict[str, Any]) -> None:
        """Merge-patch the PodGang's ``status`` subresource with ``status``. Blocks; called from a worker thread."""
        ...

    def record_event(
        self,
        *,
        namespace: str,
        kind: str,
        name: str,
        uid: str,
        reason: str,
        message: str,
        type: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        """Create a core/v1 Event about the object (best effort: callers log and ignore a failure). Blocks; called
        from a worker thread."""
        ...

    def nominate(self, nominations: Sequence[Nomination], done: Nominated, *, wanted: Wanted = lambda _: True) -> None:
        """Patch each pod's ``status.nominatedNodeName`` (the ``pods/status`` subresource, conditional on its UID).
        Returns at once; the writes go out in order, as many at once as the connections allow, and ``done`` is told
        of each. One that ``wanted`` declines when its turn comes is not sent (``done`` gets ``NotSent``)."""
        ...

    def evict(self, *, namespace: str, name: str, uid: str, dry_run: bool = False) -> None:
        """Evict the pod through the Eviction API (``pods/eviction``, conditional on its UID), so that
        PodDisruptionBudgets hold: a budget that refuses raises ``WriteError`` with ``status`` 429. ``dry_run``
        asks whether the eviction would be allowed and changes nothing. Blocks; called from a worker thread."""
        ...


@dataclass(frozen=True)
class Binding:
    namespace: str
    name: str
    uid: str
    node: str


@dataclass(frozen=True)
class Eviction:
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class RecordedEvent:
    namespace: str
    kind: str
    name: str
    reason: str
    message: str
    type: str


class InMemoryClusterWriter:
    """Records every write and, when given a store, applies it there as the API server plus a watch would:
    a bound pod gets ``spec.nodeName``, a status patch lands on the PodGang, an evicted pod is deleted (a pending
    one at once; a bound one gets a ``deletionTimestamp`` and goes when ``finalize_evictions`` plays its kubelet).
    Refuses a bind as the API server does: 404 for a pod that does not exist, 409 for another UID or a pod already
    bound; refuses an eviction with 429 for a pod named in ``budgets`` (a PodDisruptionBudget that allows none)."""

    inline = True  # memory only: bind never suspends

    def __init__(self, store: ClusterStore | None = None) -> None:
        self._store = store
        self._lock = threading.Lock()
        self.bindings: list[Binding] = []
        self.statuses: list[tuple[str, dict[str, Any]]] = []
        self.events: list[RecordedEvent] = []
        self.nominations: list[Nomination] = []
        self._nominated: dict[str, str] = {}  # pod key → the node its last written nomination names
        self.evictions: list[Eviction] = []
        self.budgets: dict[str, str] = {}  # pod key → the PodDisruptionBudget that refuses its eviction

    async def bind(self, *, namespace: str, name: str, uid: str, node: str) -> None:
        key = f"{namespace}/{name}"
        with self._lock:
            if self._store is not None:
                pod = self._store.pod(key)
                if pod is None:
                    raise WriteError(f'pods "{name}" not found in namespace {namespace}', status=404)
                if uid and pod.metadata.uid and pod.metadata.uid != uid:
                    raise WriteError(f"pod {key}: precondition failed: UID {uid}, found {pod.metadata.uid}", status=409)
                if pod.spec.nodeName:
                    raise WriteError(f'pod {key} is already assigned to node "{pod.spec.nodeName}"', status=409)
                if self._store.node(node) is None:
                    raise WriteError(f'node "{node}" not found', status=404)
                bound = pod.model_copy(update={"spec": pod.spec.model_copy(update={"nodeName": node})})
                self._store.apply("Pod", "MODIFIED", bound)
            self.bindings.append(Binding(namespace=namespace, name=name, uid=uid, node=node))

    def patch_podgang_status(self, *, namespace: str, name: str, status: dict[str, Any]) -> None:
        key = f"{namespace}/{name}"
        with self._lock:
            self.statuses.append((key, status))
            gang = self._store.podgang(key) if self._store is not None else None
            if gang is None or self._store is None:
                return
            merged = {**(gang.status.to_json_dict() if gang.status else {}), **status}
            updated = gang.model_validate({**gang.to_json_dict(), "status": merged})
        self._store.apply("PodGang", "MODIFIED", updated)

    def record_event(
        self,
        *,
        namespace: str,
        kind: str,
        name: str,
        uid: str,
        reason: str,
        message: str,
        type: Literal["Normal", "Warning"] = "Normal",
    ) -> None:
        with self._lock:
            self.events.append(
                RecordedEvent(namespace=namespace, kind=kind, name=name, reason=reason, message=message, type=type)
            )

    def nominate(self, nominations: Sequence[Nomination], done: Nominated, *, wanted: Wanted = lambda _: True) -> None:
        for nomination in nominations:
            if not wanted(nomination):
                done(nomination, NotSent(nomination))
                continue
            error: WriteError | None = None
            key = nomination.key
            with self._lock:
                pod = self._store.pod(key) if self._store is not None else None
                if self._store is not None and pod is None:
                    error = WriteError(f'pod "{key}" not found', status=404)
                elif pod is not None and pod.metadata.uid != nomination.uid:
                    error = WriteError(f"pod {key}: UID {nomination.uid}, found {pod.metadata.uid}", status=409)
                elif (now := self._nominated_now(key, pod)) != nomination.previous:
                    # What the API server's JSON patch test answers: 422, nothing written.
                    error = WriteError(
                        f"pod {key}: nominatedNodeName is {now!r}, not {nomination.previous!r}", status=422
                    )
                else:
                    self.nominations.append(nomination)
                    self._nominated[key] = nomination.node
            done(nomination, error)

    def evict(self, *, namespace: str, name: str, uid: str, dry_run: bool = False) -> None:
        key = f"{namespace}/{name}"
        with self._lock:
            if key in self.budgets:
                raise WriteError(f"evicting pod {key}: refused by PodDisruptionBudget {self.budgets[key]}", status=429)
            found = self._store.any_pod(key) if self._store is not None else None
            if self._store is not None and found is None:
                raise WriteError(f'pods "{name}" not found in namespace {namespace}', status=404)
            if found is not None and uid and _uid_of(found) and _uid_of(found) != uid:
                raise WriteError(f"pod {key}: precondition failed: UID {uid}, found {_uid_of(found)}", status=409)
            if dry_run:
                return
            self.evictions.append(Eviction(namespace=namespace, name=name, uid=uid))
        if self._store is None or found is None:
            return
        if not _node_of(found):
            self._store.apply("Pod", "DELETED", found)
        elif not _deleting(found):
            self._store.apply("Pod", "MODIFIED", _marked_deleting(found))

    def finalize_evictions(self) -> list[str]:
        """What the kubelets of the evicted pods' nodes do once their containers stop: delete them. Returns their
        keys."""
        if self._store is None:
            return []
        with self._lock:
            keys = [f"{e.namespace}/{e.name}" for e in self.evictions]
        gone: list[str] = []
        for key in dict.fromkeys(keys):
            found = self._store.any_pod(key)
            if found is not None and _deleting(found):
                self._store.apply("Pod", "DELETED", found)
                gone.append(key)
        return gone

    def nominated_elsewhere(self, key: str, node: str) -> None:
        """Another component wrote the pod's nominatedNodeName (kube-scheduler, after a preemption of its own): what
        the API holds from now on, until a write of ours whose precondition it meets."""
        with self._lock:
            self._nominated[key] = node

    def _nominated_now(self, key: str, pod: Pod | None) -> str:
        """Under the lock: the pod's nominatedNodeName as the API would read it: our last write, else the store's."""
        if key in self._nominated:
            return self._nominated[key]
        return (pod.status.nominatedNodeName or "") if pod is not None else ""

    def nominated_nodes(self) -> dict[str, str]:
        """Pod key → the node its last written nomination names ("" cleared)."""
        with self._lock:
            return {n.key: n.node for n in self.nominations}

    def bound_nodes(self) -> dict[str, str]:
        """Pod key → node of every recorded binding."""
        with self._lock:
            return {f"{b.namespace}/{b.name}": b.node for b in self.bindings}


def _uid_of(pod: Pod | ForeignPod) -> str:
    return pod.metadata.uid if isinstance(pod, Pod) else pod.uid


def _node_of(pod: Pod | ForeignPod) -> str:
    return pod.spec.nodeName if isinstance(pod, Pod) else pod.node


def _deleting(pod: Pod | ForeignPod) -> bool:
    return pod.deleting


def _marked_deleting(pod: Pod | ForeignPod) -> Pod | ForeignPod:
    """The pod as the API server leaves it after a graceful delete: a ``deletionTimestamp``, still on its node."""
    if isinstance(pod, ForeignPod):
        return replace(pod, deleting=True)
    meta = pod.metadata.model_copy(update={"deletionTimestamp": datetime.now(UTC)})
    return pod.model_copy(update={"metadata": meta})
