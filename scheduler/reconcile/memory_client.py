"""An in-memory ``ReconcileApi``: the API server's behaviour that matters to the reconciler, with no server.

It enforces what a real API server would (AlreadyExists, stale ``resourceVersion``, status only through its
subresource, garbage collection of owned objects when their PodCliqueSet goes) so tests exercise the reconciler's
handling of them. It is also the engine of ``reconcile --dry-run``. Test helpers (``apply``, ``bind_pod``,
``set_pod_ready``) stand in for kubectl and the scheduler.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar, get_args

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
from scheduler.reconcile.desired.names import LABEL_PART_OF

__all__ = ["InMemoryApi", "Write"]

_T = TypeVar("_T")


def _clone(value: _T) -> _T:
    """A deep copy of JSON data (every object here is one); faster than ``copy.deepcopy`` (~95 µs vs ~150 µs a pod)."""
    copied: _T = json.loads(json.dumps(value))
    return copied


_Key = tuple[str, str, str]  # (kind, namespace, name); namespace "" for cluster-scoped
# Kinds whose status only its subresource writes: a create or a PUT never sets it.
_STATUS_SUBRESOURCE = frozenset({"PodGang", "PodClique", "PodCliqueScalingGroup", "HorizontalPodAutoscaler"})


@dataclass(frozen=True)
class Write:
    """One mutating call, as logged for tests: the verb, the kind and the object's name."""

    verb: str
    kind: str
    name: str


@dataclass
class InMemoryApi:
    objects: dict[_Key, KubeObject] = field(default_factory=dict)
    writes: list[Write] = field(default_factory=list)
    created: list[KubeObject] = field(default_factory=list)
    events: list[KubeObject] = field(default_factory=list)
    clock: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))  # stamps creationTimestamp
    _pending: set[ObjectKey] = field(default_factory=set)
    _versions: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    # --- helpers standing in for kubectl, the scheduler and the kubelet ------------------------------------

    def apply(self, obj: KubeObject) -> KubeObject:
        """Create or update (spec and metadata; generation bumps on spec change), like ``kubectl apply``."""
        kind, meta = obj["kind"], obj["metadata"]
        key = (kind, meta.get("namespace", ""), meta["name"])
        stored = self.objects.get(key)
        if stored is None:
            return self._store(_clone(obj), new=True)
        updated = _clone(obj)
        updated["metadata"] = {**stored["metadata"], **_clone(meta)}
        updated["metadata"]["generation"] = stored["metadata"].get("generation", 1) + int(
            obj.get("spec") != stored.get("spec")
        )
        if "status" in stored:
            updated["status"] = stored["status"]
        return self._store(updated, new=False)

    def remove(self, kind: str, *, namespace: str, name: str) -> None:
        """Delete any object, with the garbage collector's cascade to objects it controls. An object with
        finalizers is only marked (``deletionTimestamp``), as the API server does, and goes once a write has taken
        the last one off."""
        stored = self.objects.get((kind, namespace, name))
        if stored is None:
            return
        if stored["metadata"].get("finalizers"):
            if not stored["metadata"].get("deletionTimestamp"):
                stored["metadata"]["deletionTimestamp"] = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
                self._bump(stored)
            return
        del self.objects[(kind, namespace, name)]
        self._touch(stored)
        uid = stored["metadata"].get("uid")
        for key, obj in list(self.objects.items()):
            if any(ref.get("uid") == uid for ref in obj["metadata"].get("ownerReferences", [])):
                self.remove(key[0], namespace=key[1], name=key[2])

    def bind_pod(self, namespace: str, name: str, node: str) -> None:
        pod = self.objects[("Pod", namespace, name)]
        if pod["spec"].get("schedulingGates"):
            raise ApiError(422, f"pod {name} is still scheduling-gated and cannot be bound")
        pod["spec"]["nodeName"] = node
        self._bump(pod)

    def set_pod_ready(self, namespace: str, name: str, *, ready: bool = True) -> None:
        pod = self.objects[("Pod", namespace, name)]
        pod["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": str(ready)}]}
        self._bump(pod)

    def scale(self, kind: str, *, namespace: str, name: str, replicas: int) -> None:
        """``kubectl scale`` (or an HPA): set ``spec.replicas`` through the scale subresource."""
        stored = self._get(kind, namespace, name)
        stored["spec"]["replicas"] = replicas
        stored["metadata"]["generation"] = stored["metadata"].get("generation", 1) + 1
        self._bump(stored)

    def of_kind(self, kind: str) -> list[KubeObject]:
        return [obj for (k, _, _), obj in sorted(self.objects.items()) if k == kind]

    # --- ReconcileApi --------------------------------------------------------------------------------------

    def list_podcliquesets(self) -> list[KubeObject]:
        return _clone(self.of_kind("PodCliqueSet"))

    def get_podcliqueset(self, namespace: str, name: str) -> KubeObject | None:
        return _clone(self.objects.get(("PodCliqueSet", namespace, name)))

    def patch_podcliqueset_status(self, namespace: str, name: str, *, status: KubeObject) -> None:
        stored = self._get("PodCliqueSet", namespace, name)
        stored["status"] = _merge(stored.get("status") or {}, status)
        self._log("patch-status", stored)
        self._bump(stored)

    def get_topology_binding(self, name: str) -> KubeObject | None:
        return _clone(self.objects.get(("ClusterTopologyBinding", "", name)))

    def get_resource_claim_template(self, namespace: str, name: str) -> KubeObject | None:
        return _clone(self.objects.get(("ResourceClaimTemplate", namespace, name)))

    def list_owned(self, kind: OwnedKind, *, namespace: str, part_of: str) -> list[KubeObject]:
        found = [
            (key, obj)
            for key, obj in self.objects.items()
            if key[0] == kind
            and key[1] == namespace
            and obj["metadata"].get("labels", {}).get(LABEL_PART_OF) == part_of
        ]
        return [_clone(obj) for _, obj in sorted(found, key=lambda item: item[0])]

    def create(self, obj: KubeObject) -> KubeObject:
        meta = obj["metadata"]
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        if key in self.objects:
            raise Conflict(409, f'{obj["kind"]} "{meta["name"]}" already exists')
        stored = _clone(obj)
        if obj["kind"] in _STATUS_SUBRESOURCE:
            stored.pop("status", None)  # status has its own subresource: a create cannot set it
        if obj["kind"] == "Pod":
            stored["status"] = {"phase": "Pending"}
        self.created.append(_clone(obj))
        self._log("create", stored)
        return self._store(stored, new=True)

    def replace(self, obj: KubeObject) -> KubeObject:
        meta, kind = obj["metadata"], obj["kind"]
        if kind not in get_args(ReplacedKind):
            raise ApiError(405, f"PUT {kind} is not something the reconciler does")
        stored = self._get(kind, meta["namespace"], meta["name"])
        self._check_version(stored, meta.get("resourceVersion", ""))
        updated = _clone(obj)
        if "status" in stored:
            updated["status"] = stored["status"]
        else:
            updated.pop("status", None)
        for key in ("uid", "creationTimestamp"):
            updated["metadata"][key] = stored["metadata"][key]
        if deleting := stored["metadata"].get("deletionTimestamp"):
            updated["metadata"]["deletionTimestamp"] = deleting  # a write cannot undo a deletion
        before = stored["metadata"].get("generation", 1)
        updated["metadata"]["generation"] = before + int(updated.get("spec") != stored.get("spec"))
        self._log("replace", updated)
        result = self._store(updated, new=False)
        if deleting and not updated["metadata"].get("finalizers"):
            self.remove(kind, namespace=meta["namespace"], name=meta["name"])  # the last finalizer is off: gone
        return result

    def patch_status(
        self, kind: StatusKind, *, namespace: str, name: str, status: KubeObject, resource_version: str
    ) -> KubeObject:
        stored = self._get(kind, namespace, name)
        self._check_version(stored, resource_version)
        stored["status"] = _merge(stored.get("status") or {}, status)
        self._log("patch-status", stored)
        self._bump(stored)
        return _clone(stored)

    def set_pod_scheduling_gates(
        self, namespace: str, name: str, *, gates: list[KubeObject], resource_version: str
    ) -> None:
        stored = self._get("Pod", namespace, name)
        self._check_version(stored, resource_version)
        current = {gate["name"] for gate in stored["spec"].get("schedulingGates") or []}
        if not {gate["name"] for gate in gates} <= current:
            raise ApiError(422, "spec.schedulingGates: only deletion is allowed")
        stored["spec"]["schedulingGates"] = _clone(gates)
        self._log("ungate", stored)
        self._bump(stored)

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
        stored = self.objects.get((kind, namespace, name))
        if stored is None:
            raise NotFound(404, f'{kind} "{name}" not found')
        return stored

    @staticmethod
    def _check_version(stored: KubeObject, resource_version: str) -> None:
        if resource_version and resource_version != stored["metadata"]["resourceVersion"]:
            name = stored["metadata"]["name"]
            raise Conflict(
                409, f"the object {name!r} has been modified; please apply your changes to the latest version"
            )

    def _store(self, obj: KubeObject, *, new: bool) -> KubeObject:
        meta = obj["metadata"]
        if new:
            meta["uid"] = f"uid-{next(self._versions)}"
            meta.setdefault("generation", 1)
            meta["creationTimestamp"] = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        self.objects[(obj["kind"], meta.get("namespace", ""), meta["name"])] = obj
        self._bump(obj)
        return _clone(obj)

    def _bump(self, obj: KubeObject) -> None:
        obj["metadata"]["resourceVersion"] = str(next(self._versions))
        self._touch(obj)

    def _touch(self, obj: KubeObject) -> None:
        meta = obj["metadata"]
        if obj["kind"] == "PodCliqueSet":
            self._pending.add((meta.get("namespace", ""), meta["name"]))
        elif part_of := meta.get("labels", {}).get(LABEL_PART_OF):
            self._pending.add((meta.get("namespace", ""), part_of))
        elif obj["kind"] == "ClusterTopologyBinding":
            self._pending.update(_keys(self.of_kind("PodCliqueSet")))

    def _log(self, verb: str, obj: KubeObject) -> None:
        self.writes.append(Write(verb, obj["kind"], obj["metadata"]["name"]))


def _keys(objects: Iterable[KubeObject]) -> set[ObjectKey]:
    return {(obj["metadata"].get("namespace", ""), obj["metadata"]["name"]) for obj in objects}


def _merge(base: KubeObject, patch: KubeObject) -> KubeObject:
    """RFC 7386 JSON merge patch: objects merge key by key, ``None`` deletes, anything else replaces."""
    merged: dict[str, Any] = _clone(base)
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = _clone(value)
    return merged
