"""An in-memory ``ReconcileApi``: the reconciler's requests, made to the in-memory API (``scheduler.kube.memory``)
instead of a server.

The store enforces what kube-apiserver would (AlreadyExists, stale ``resourceVersion``, status only through its
subresource, scheduling gates that can only go, garbage collection of owned objects when their owner goes), so
tests exercise the reconciler's handling of them. It is also the engine of ``reconcile --dry-run``. Test helpers
(``apply``, ``remove``, ``bind_pod``, ``set_pod_ready``, ``scale``) stand in for kubectl, the scheduler and the
kubelet; ``writes``, ``created`` and ``events`` record what the reconciler asked for.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeVar, get_args

from api.grove import LABEL_PART_OF
from scheduler.kube.json_copy import json_copy
from scheduler.kube.memory.resources import CORE_EVENTS, PODS, RESOURCES, StatusError
from scheduler.kube.memory.store import Entry, Store
from scheduler.reconcile.client import (
    ApiError,
    Conflict,
    KubeObject,
    NotFound,
    ObjectKey,
    OwnedKind,
    ReplacedKind,
    StatusKind,
)

__all__ = ["InMemoryApi", "Write"]

_T = TypeVar("_T")

# The reconciler names objects by kind alone; Event is the one kind served twice (core and events.k8s.io).
_RESOURCE_OF: dict[str, str] = {
    spec.kind: key for key, spec in RESOURCES.items() if spec.kind != "Event" or key == CORE_EVENTS
}


def _refused(err: StatusError) -> ApiError:
    """The error the real client raises for the same refusal (``scheduler.reconcile.rest_client``)."""
    if err.code == 404:
        return NotFound(err.code, err.message)
    if err.code == 409:
        return Conflict(err.code, err.message)
    return ApiError(err.code, err.message)


@dataclass(frozen=True)
class Write:
    """One mutating call, as logged for tests: the verb, the kind and the object's name."""

    verb: str
    kind: str
    name: str


class _ByKind(Mapping[tuple[str, str, str], KubeObject]):
    """The stored objects by (kind, namespace, name), namespace "" for cluster-scoped ones. Deleting one drops it
    from the store with no event and no garbage collection, as if it went unseen."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def __getitem__(self, key: tuple[str, str, str]) -> KubeObject:
        kind, namespace, name = key
        return self._store.objects[_RESOURCE_OF[kind]][(namespace, name)]

    def __delitem__(self, key: tuple[str, str, str]) -> None:
        kind, namespace, name = key
        if (namespace, name) not in self._store.objects.get(_RESOURCE_OF[kind], {}):
            raise KeyError(key)
        self._store.remove(_RESOURCE_OF[kind], namespace, name, silent=True)

    def __iter__(self) -> Iterator[tuple[str, str, str]]:
        for resource, bucket in list(self._store.objects.items()):
            for namespace, name in list(bucket):
                yield RESOURCES[resource].kind, namespace, name

    def __len__(self) -> int:
        return sum(len(bucket) for bucket in self._store.objects.values())


class InMemoryApi:
    """``clock`` stamps ``creationTimestamp``; UIDs are ``uid-<n>``, so a dry run's output is reproducible. No
    admission plugins: a pod may name a ServiceAccount the cluster does not hold yet (a dry run starts empty)."""

    def __init__(self, *, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        uids = itertools.count(1)
        self.clock = clock
        self.store = Store(clock=clock, uids=lambda: f"uid-{next(uids)}", service_accounts=False, history=0)
        self.objects = _ByKind(self.store)
        self.writes: list[Write] = []
        self.created: list[KubeObject] = []  # as the reconciler sent them, in order
        self.events: list[KubeObject] = []
        self._pending: set[ObjectKey] = set()
        self.store.listen(self._touched)

    # --- helpers standing in for kubectl, the scheduler and the kubelet ------------------------------------

    def apply(self, obj: KubeObject) -> KubeObject:
        """Create or update (spec and metadata; generation bumps on spec change), like ``kubectl apply``. An object
        of a kind the API does not serve is ignored (a dry run's input may hold anything beside PodCliqueSets)."""
        resource = _RESOURCE_OF.get(obj["kind"])
        return json_copy(self.store.apply(obj, resource=resource) if resource else obj)

    def remove(self, kind: str, *, namespace: str, name: str) -> None:
        """Delete any object, with the garbage collector's cascade to objects it controls. An object with
        finalizers is only marked (``deletionTimestamp``), as the API server does, and goes once a write has taken
        the last one off."""
        resource = _RESOURCE_OF[kind]
        with self.store.cond:
            stored = self.store.objects.get(resource, {}).get((namespace, name))
            if stored is not None:
                self.store.delete(resource, stored, propagation=None)

    def bind_pod(self, namespace: str, name: str, node: str) -> None:
        body = {"kind": "Binding", "metadata": {"name": name}, "target": {"kind": "Node", "name": node}}
        self._call(lambda: self.store.bind(self._get("Pod", namespace, name), body))

    def set_pod_ready(self, namespace: str, name: str, *, ready: bool = True) -> None:
        current = self._get("Pod", namespace, name)
        status = {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]}
        self._call(lambda: self.store.patch(PODS, current, {"status": status}, subresource="status"))

    def scale(self, kind: str, *, namespace: str, name: str, replicas: int) -> None:
        """``kubectl scale`` (or an HPA): set ``spec.replicas`` through the scale subresource."""
        current = self._get(kind, namespace, name)
        self._call(lambda: self.store.scale(_RESOURCE_OF[kind], current, {"spec": {"replicas": replicas}}, "PATCH"))

    def of_kind(self, kind: str) -> list[KubeObject]:
        bucket = self.store.objects.get(_RESOURCE_OF.get(kind, ""), {})
        return [obj for _, obj in sorted(bucket.items())]

    # --- ReconcileApi --------------------------------------------------------------------------------------

    def list_podcliquesets(self) -> list[KubeObject]:
        return json_copy(self.of_kind("PodCliqueSet"))

    def get_podcliqueset(self, namespace: str, name: str) -> KubeObject | None:
        return json_copy(self.objects.get(("PodCliqueSet", namespace, name)))

    def patch_podcliqueset_status(self, namespace: str, name: str, *, status: KubeObject) -> None:
        current = self._get("PodCliqueSet", namespace, name)
        resource = _RESOURCE_OF["PodCliqueSet"]
        self._call(lambda: self.store.patch(resource, current, {"status": status}, subresource="status"))
        self._log("patch-status", current)

    def get_topology_binding(self, name: str) -> KubeObject | None:
        return json_copy(self.objects.get(("ClusterTopologyBinding", "", name)))

    def get_resource_claim_template(self, namespace: str, name: str) -> KubeObject | None:
        return json_copy(self.objects.get(("ResourceClaimTemplate", namespace, name)))

    def list_owned(self, kind: OwnedKind, *, namespace: str, part_of: str) -> list[KubeObject]:
        items, _, _ = self.store.page(
            _RESOURCE_OF[kind], namespace, fields=None, labels=f"{LABEL_PART_OF}={part_of}", after=None, limit=0
        )
        return items

    def create(self, obj: KubeObject) -> KubeObject:
        sent = json.dumps(obj)  # two copies, one the store keeps and one the record: one encoding
        body = json.loads(sent)
        stored = self._call(lambda: self.store.create(_RESOURCE_OF[obj["kind"]], obj["metadata"]["namespace"], body))
        self.created.append(json.loads(sent))
        self._log("create", stored)
        return json_copy(stored)

    def replace(self, obj: KubeObject) -> KubeObject:
        meta, kind = obj["metadata"], obj["kind"]
        if kind not in get_args(ReplacedKind):
            raise ApiError(405, f"PUT {kind} is not something the reconciler does")
        current = self._get(kind, meta["namespace"], meta["name"])
        stored = self._call(lambda: self.store.replace(_RESOURCE_OF[kind], current, obj))
        self._log("replace", stored)
        return json_copy(stored)

    def patch_status(
        self, kind: StatusKind, *, namespace: str, name: str, status: KubeObject, resource_version: str
    ) -> KubeObject:
        current = self._get(kind, namespace, name)
        patch = {"metadata": {"resourceVersion": resource_version}, "status": status}
        stored = self._call(lambda: self.store.patch(_RESOURCE_OF[kind], current, patch, subresource="status"))
        self._log("patch-status", stored)
        return json_copy(stored)

    def set_pod_scheduling_gates(
        self, namespace: str, name: str, *, gates: list[KubeObject], resource_version: str | None
    ) -> None:
        current = self._get("Pod", namespace, name)
        patch: KubeObject = {"spec": {"schedulingGates": json_copy(gates)}}
        if resource_version is not None:
            patch["metadata"] = {"resourceVersion": resource_version}
        stored = self._call(lambda: self.store.patch(PODS, current, patch, subresource=None))
        self._log("ungate", stored)

    def delete(self, kind: OwnedKind, *, namespace: str, name: str) -> None:
        stored = self.objects.get((kind, namespace, name))
        if stored is not None:
            self._log("delete", stored)
            self.remove(kind, namespace=namespace, name=name)

    def record_event(
        self,
        *,
        involved: KubeObject,
        reason: str,
        message: str,
        type: Literal["Normal", "Warning"],
    ) -> None:
        self.events.append({"involvedObject": involved, "reason": reason, "message": message, "type": type})

    def changes(self, timeout: float) -> set[ObjectKey]:
        # Never blocks: everything that changed did so synchronously, before this call.
        pending, self._pending = self._pending, set()
        return pending

    # --- internals -------------------------------------------------------------------------------------------

    def _get(self, kind: str, namespace: str, name: str) -> KubeObject:
        return self._call(lambda: self.store.find(_RESOURCE_OF[kind], namespace, name))

    @staticmethod
    def _call(request: Callable[[], _T]) -> _T:
        try:
            return request()
        except StatusError as err:
            raise _refused(err) from None

    def _touched(self, entry: Entry) -> None:
        """What a change means to the reconciler: the PodCliqueSet it concerns, as ``KubeApi``'s watches see it."""
        meta = entry.obj.get("metadata") or {}
        kind = RESOURCES[entry.resource].kind
        if kind == "PodCliqueSet":
            self._pending.add((meta.get("namespace", ""), meta["name"]))
        elif part_of := (meta.get("labels") or {}).get(LABEL_PART_OF):
            self._pending.add((meta.get("namespace", ""), part_of))
        elif kind == "ClusterTopologyBinding":
            self._pending.update(
                (pcs["metadata"].get("namespace", ""), pcs["metadata"]["name"]) for pcs in self.of_kind("PodCliqueSet")
            )

    def _log(self, verb: str, obj: KubeObject) -> None:
        self.writes.append(Write(verb, obj["kind"], obj["metadata"]["name"]))
