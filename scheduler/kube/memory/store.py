"""The fake API server's state and the API semantics tests rely on, with no HTTP.

Objects per resource under one global resourceVersion; an event log for watches (410 Gone below the last
``compact``); creation with ``generateName``, AlreadyExists and namespace checks; optimistic concurrency on PUT and
on patches that carry ``metadata.resourceVersion``; ``metadata.generation`` bumped by spec changes; ``status`` only
through its subresource; scheduling gates that can only be removed; ``pods/binding`` with kube-apiserver's refusals;
and deletion that cascades to dependents (ownerReferences) unless orphaned — done at once, where the real garbage
collector runs shortly after. Every refusal is a ``StatusError`` the HTTP layer turns into a ``v1.Status``.
"""

from __future__ import annotations

import bisect
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scheduler.kube.json_copy import json_copy
from scheduler.kube.memory.resources import (
    PODS,
    RESOURCES,
    SERVICEACCOUNTS,
    Resource,
    StatusError,
    resource_for,
    status_body,
)
from scheduler.kube.memory.selectors import field_matches, label_matches, merge_patch

__all__ = ["Entry", "Store"]

Obj = dict[str, Any]
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"  # the apiserver's generateName alphabet (no vowels, no look-alikes)


def _wall_clock() -> datetime:
    return datetime.now(UTC)


def _random_uid() -> str:
    return str(uuid.uuid4())


@dataclass
class Entry:
    """One line of the watch log: a change (with the object before it, for selector transitions), a bookmark, or
    an error for open watches. ``obj`` and ``old`` are the stored objects themselves, which nothing changes in
    place (every write stores a new dict), so the log costs no copies."""

    rv: int
    resource: str
    type: str
    obj: Obj
    old: Obj | None = None


class Store:
    """``clock`` stamps ``creationTimestamp`` and ``uids`` names new objects (the simulator's clock and
    reproducible names; wall time and random UUIDs otherwise). ``service_accounts`` runs the ServiceAccount
    admission plugin on pod creation (off for a dry run, which shows what would be created on any cluster).
    ``history``: how many changes the log keeps for watches to resume from (None: all; a client that only listens
    needs none, and every old version the log holds is memory the garbage collector walks)."""

    def __init__(
        self,
        *,
        clock: Callable[[], datetime] = _wall_clock,
        uids: Callable[[], str] = _random_uid,
        service_accounts: bool = True,
        history: int | None = None,
    ) -> None:
        self.cond = threading.Condition()  # re-entrant: helpers call each other holding it
        self.clock = clock
        self.uids = uids
        self.service_accounts = service_accounts
        self.history = history
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {}
        # Each resource's keys in list order, kept until one is added or removed: sorting 100,000 pods for every
        # page of 500 made one list take minutes.
        self._sorted: dict[str, list[tuple[str, str]]] = {}
        self.log: list[Entry] = []
        self.rv = 100
        self.compacted = 0
        self.closing = False
        self._listeners: list[Callable[[Entry], None]] = []

    # --- reads -------------------------------------------------------------------------------------------------

    def find(self, resource: str, namespace: str, name: str) -> Obj:
        found = self.objects.get(resource, {}).get((namespace, name))
        if found is None:
            plural = resource.rsplit("/", 1)[1]
            raise StatusError(404, "NotFound", f'{plural} "{name}" not found')
        return found

    def page(
        self,
        resource: str,
        namespace: str,
        *,
        fields: str | None,
        labels: str | None,
        after: tuple[str, str] | None,
        limit: int,
    ) -> tuple[list[Obj], int, tuple[str, str] | None]:
        """One page of a list: the items after the key ``after`` (in namespace/name order, as etcd's key order
        is), the list's resourceVersion, and the key to continue after (``None`` on the last page). Continuing
        after a key, as kube-apiserver's continue token does, neither skips nor repeats an object when others are
        added or removed between pages."""
        with self.cond:
            bucket = self.objects.get(resource, {})
            keys = self._sorted.get(resource)
            if keys is None:
                keys = self._sorted[resource] = sorted(bucket)
            items: list[Obj] = []
            last: tuple[str, str] | None = None
            for index in range(bisect.bisect_right(keys, after) if after else 0, len(keys)):
                key = keys[index]
                obj = bucket[key]
                if (
                    (namespace and key[0] != namespace)
                    or not field_matches(obj, fields)
                    or not label_matches(obj, labels)
                ):
                    continue
                if limit and len(items) == limit:
                    return items, self.rv, last
                items.append(json_copy(obj))
                last = key
            return items, self.rv, None

    # --- writes through the API ----------------------------------------------------------------------------------

    def create(self, resource: str, namespace: str, body: Any) -> Obj:
        meta = body.get("metadata") if isinstance(body, dict) else None
        if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
            raise StatusError(422, "Invalid", "metadata.name: Required value: name or generateName is required")
        spec = RESOURCES[resource]
        if spec.namespaced and meta.get("namespace", namespace) != namespace:
            raise StatusError(
                400,
                "BadRequest",
                "the namespace of the provided object does not match the namespace sent on the request",
            )
        meta["namespace"] = namespace if spec.namespaced else ""
        with self.cond:
            if not meta.get("name"):
                meta["name"] = meta["generateName"] + "".join(_SUFFIX[b % len(_SUFFIX)] for b in uuid.uuid4().bytes[:5])
            if (meta["namespace"], meta["name"]) in self.objects.get(resource, {}):
                raise StatusError(409, "AlreadyExists", f'{resource.rsplit("/", 1)[1]} "{meta["name"]}" already exists')
            if spec.status_subresource:  # a create cannot set status; a pod starts Pending
                body.pop("status", None)
                if resource == PODS:
                    body["status"] = {"phase": "Pending"}
            if resource == PODS and self.service_accounts:
                self._check_service_account(namespace, body, meta["name"])
            for key in ("uid", "creationTimestamp", "generation"):  # the server's to set, whatever was sent
                meta.pop(key, None)
            return self.save(resource, body)

    def replace(self, resource: str, current: Obj, body: Any) -> Obj:
        """PUT: conditional on ``metadata.resourceVersion`` when the body carries one, as kube-apiserver is."""
        meta = (body or {}).get("metadata") or {}
        if meta.get("name") != current["metadata"]["name"]:
            raise StatusError(400, "BadRequest", "the name of the object does not match the name on the URL")
        self._check_version(resource, current, meta.get("resourceVersion"))
        updated = json_copy(body)
        self._keep_identity(resource, current, updated)
        return self._released(resource, self.save(resource, updated))

    def patch(self, resource: str, current: Obj, patch: Any, *, subresource: str | None) -> Obj:
        """A merge patch of the object, or with ``subresource="status"`` of its status alone."""
        if not isinstance(patch, dict):
            raise StatusError(400, "BadRequest", "a merge patch must be a JSON object")
        self._check_version(resource, current, (patch.get("metadata") or {}).get("resourceVersion"))
        if subresource == "status":
            updated = dict(current)
            updated["status"] = merge_patch(current.get("status"), patch.get("status") or {})
            _check_status(resource, updated)
        else:
            updated = merge_patch(current, patch)
            self._keep_identity(resource, current, updated)
        if resource == PODS:
            _check_gates(current, updated)
        return self._released(resource, self.save(resource, updated))

    def scale(self, resource: str, current: Obj, body: Any, method: str) -> Obj:
        """The ``scale`` subresource of a CRD, as kube-apiserver serves it: an ``autoscaling/v1`` Scale read from
        the CRD's paths; a PUT or merge PATCH of it writes ``spec.replicas`` alone (generation bumps, as for any
        spec change), conditional on the Scale's ``resourceVersion`` when it carries one."""
        paths = RESOURCES[resource].scale
        if paths is None:
            raise StatusError(404, "NotFound", f"{resource} has no scale subresource")
        if body is not None:
            if not isinstance(body, dict):
                raise StatusError(400, "BadRequest", "a Scale must be a JSON object")
            self._check_version(resource, current, (body.get("metadata") or {}).get("resourceVersion"))
            wanted = merge_patch(self._scale_of(resource, current), body) if method == "PATCH" else body
            replicas = (wanted.get("spec") or {}).get("replicas")
            if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
                message = f'Scale.autoscaling "{current["metadata"]["name"]}" is invalid: spec.replicas: must be ≥ 0'
                raise StatusError(422, "Invalid", message)
            updated = json_copy(current)
            _set_path(updated, paths.spec_replicas, replicas)
            current = self.save(resource, updated)
        return self._scale_of(resource, current)

    @staticmethod
    def _scale_of(resource: str, obj: Obj) -> Obj:
        paths = RESOURCES[resource].scale
        assert paths is not None
        meta = obj["metadata"]
        status: Obj = {"replicas": _get_path(obj, paths.status_replicas) or 0}
        if paths.label_selector and (selector := _get_path(obj, paths.label_selector)):
            status["selector"] = selector
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                key: meta[key]
                for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if key in meta
            },
            "spec": {"replicas": _get_path(obj, paths.spec_replicas) or 0},
            "status": status,
        }

    def delete(self, resource: str, current: Obj, *, propagation: str | None) -> None:
        """Remove the object and, unless orphaned, what it owns; an object with finalizers is only marked
        (``deletionTimestamp``) and goes once a write has taken the last one off, as kube-apiserver does."""
        meta = current["metadata"]
        if meta.get("finalizers"):
            if not meta.get("deletionTimestamp"):
                stamp = self.clock().strftime("%Y-%m-%dT%H:%M:%SZ")
                self.save(resource, {**current, "metadata": {**meta, "deletionTimestamp": stamp}})
            return
        self.remove(resource, meta.get("namespace", ""), meta["name"])
        if propagation == "Orphan":
            return
        uid = meta.get("uid")
        for other, bucket in self.objects.items():
            for dependent in list(bucket.values()):
                if any(ref.get("uid") == uid for ref in dependent["metadata"].get("ownerReferences") or []):
                    self.delete(other, dependent, propagation=propagation)

    def bind(self, pod: Obj, body: Any) -> None:
        """``pods/binding``: the refusals kube-apiserver makes (bad Binding, stale UID, already bound, gated)."""
        name = pod["metadata"]["name"]
        target = ((body or {}).get("target") or {}) if isinstance(body, dict) else {}
        if not isinstance(body, dict) or body.get("kind") != "Binding" or target.get("kind") != "Node":
            raise StatusError(400, "BadRequest", "a Binding with target.kind Node and target.name is required")
        if not target.get("name"):
            raise StatusError(400, "BadRequest", "a Binding with target.kind Node and target.name is required")
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            raise StatusError(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, UID in object meta: ")
        if node := pod.get("spec", {}).get("nodeName"):
            message = f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{node}"'  # noqa: E501
            raise StatusError(409, "Conflict", message)
        if pod.get("spec", {}).get("schedulingGates"):
            raise StatusError(500, "InternalError", f"pod {name} has non-empty .spec.schedulingGates")
        self.save(PODS, {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": target["name"]}})

    # --- test helpers: kubectl and etcd stand-ins ----------------------------------------------------------------

    def apply(self, obj: Obj, *, resource: str | None = None) -> Obj:
        """Like ``kubectl apply``: create, or update labels, annotations and spec keeping status; no version check.
        ``resource`` when given, else the one the object's apiVersion and kind name."""
        resource = resource or resource_for(obj)
        meta = obj["metadata"]
        namespace = meta.get("namespace", "") if RESOURCES[resource].namespaced else ""
        with self.cond:
            current = self.objects.get(resource, {}).get((namespace, meta["name"]))
            updated = json_copy(obj)
            updated["metadata"]["namespace"] = namespace
            if current is not None:
                updated["metadata"] = {**current["metadata"], **updated["metadata"]}
                updated.pop("status", None)
                if "status" in current:
                    updated["status"] = current["status"]
            return self._released(resource, self.save(resource, updated))

    def remove(self, resource: str, namespace: str, name: str, *, silent: bool = False) -> None:
        with self.cond:
            obj = self.objects.get(resource, {}).pop((namespace, name), None)
            if obj is not None:
                self._sorted.pop(resource, None)
                self.rv += 1
                gone = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.rv)}}
                if not silent:
                    self._append(resource, "DELETED", gone, old=obj)

    def save(self, resource: str, obj: Obj, *, silent: bool = False) -> Obj:
        """Store ``obj`` as the new state of its object: the next resourceVersion, identity and generation. The store
        keeps ``obj`` itself (its ``metadata`` copied): the caller hands it over and changes it no more.

        Every write returns the stored object itself, not a copy: read it, serialise it, or copy it before a
        change (what the HTTP server sends needs no copy, what a test helper hands out does)."""
        spec = RESOURCES[resource]
        with self.cond:
            meta = obj["metadata"] = dict(obj.get("metadata") or {})
            bucket = self.objects.setdefault(resource, {})
            old = bucket.get((meta.get("namespace", ""), meta["name"]))
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            meta.setdefault("uid", self.uids())
            meta.setdefault("creationTimestamp", self.clock().strftime("%Y-%m-%dT%H:%M:%SZ"))
            before = old["metadata"].get("generation", 1) if old else 0
            meta["generation"] = before + 1 if old is None or old.get("spec") != obj.get("spec") else before
            obj.setdefault("kind", spec.kind)
            obj.setdefault("apiVersion", Resource.api_version(resource))
            if old is None:
                self._sorted.pop(resource, None)
            bucket[(meta.get("namespace", ""), meta["name"])] = obj
            if not silent:
                self._append(resource, "ADDED" if old is None else "MODIFIED", obj, old=old)
            return obj

    # --- internals (hold self.cond) ------------------------------------------------------------------------------

    def _check_service_account(self, namespace: str, pod: Obj, name: str) -> None:
        """The ServiceAccount admission plugin: a pod may only name an account that exists (``default`` always
        does, as the token controller makes one per namespace)."""
        account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
        if account != "default" and (namespace, account) not in self.objects.get(SERVICEACCOUNTS, {}):
            message = (
                f'pods "{name}" is forbidden: error looking up service account {namespace}/{account}: '
                f'serviceaccount "{account}" not found'
            )
            raise StatusError(403, "Forbidden", message)

    def _check_version(self, resource: str, current: Obj, sent: str | None) -> None:
        if sent and sent != current["metadata"]["resourceVersion"]:
            plural, name = resource.rsplit("/", 1)[1], current["metadata"]["name"]
            message = (
                f'Operation cannot be fulfilled on {plural} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again"
            )
            raise StatusError(409, "Conflict", message)

    @staticmethod
    def _keep_identity(resource: str, current: Obj, updated: Obj) -> None:
        meta = updated["metadata"] = dict(updated.get("metadata") or {})  # a merge patch may share current's
        meta.pop("deletionTimestamp", None)  # the server's to set, on delete; no write sets or undoes it
        for key in ("namespace", "uid", "creationTimestamp", "generation", "deletionTimestamp"):
            if key in current["metadata"]:
                meta[key] = current["metadata"][key]
        if RESOURCES[resource].status_subresource:  # only the status subresource writes status
            updated.pop("status", None)
            if "status" in current:
                updated["status"] = current["status"]

    def _released(self, resource: str, obj: Obj) -> Obj:
        """After a write: an object marked for deletion whose last finalizer the write took off goes now."""
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.delete(resource, obj, propagation=None)
        return obj

    def _append(self, resource: str, event_type: str, obj: Obj, *, old: Obj | None = None) -> None:
        entry = Entry(self.rv, resource, event_type, obj, old)
        if self.history == 0:
            self.compacted = self.rv
        else:
            self.log.append(entry)
            if self.history is not None and len(self.log) > self.history:
                self.compact(keep=self.history)
        self.cond.notify_all()
        for listener in self._listeners:
            listener(entry)

    def bookmark(self, resource: str) -> None:
        with self.cond:
            meta = {"resourceVersion": str(self.rv)}
            body = {"kind": RESOURCES[resource].kind, "apiVersion": Resource.api_version(resource), "metadata": meta}
            self._append(resource, "BOOKMARK", body)

    def expire(self, resource: str) -> None:
        with self.cond:
            self._append(resource, "ERROR", status_body(410, "Expired", "too old resource version"))

    def compact(self, *, keep: int = 0) -> None:
        """Forget all history but the last ``keep`` entries, as etcd compaction does: a watch from an older
        resourceVersion gets 410 Gone; open watches end once they drained the old log (their clients watch again
        from where they were, or relist)."""
        with self.cond:
            kept = self.log[len(self.log) - keep :] if keep else []
            self.compacted = kept[0].rv - 1 if kept else self.rv
            self.log = kept
            self.cond.notify_all()

    # --- watch ---------------------------------------------------------------------------------------------------

    def listen(self, listener: Callable[[Entry], None]) -> None:
        """Call ``listener`` with every entry as it is logged, before the write returns: the watch of an in-process
        client (the simulator's, on a simulated clock, cannot block on ``cond``), which delivers later itself."""
        with self.cond:
            self._listeners.append(listener)

    def watch(
        self, *, resource: str, since: int, fields: str | None, labels: str | None, bookmarks: bool, timeout: float
    ) -> Iterator[dict[str, Any]]:
        """Events after ``since`` as a watch streams them, until ``timeout``, an error, compaction or shutdown."""
        deadline = time.monotonic() + timeout
        with self.cond:
            expired = since < self.compacted
            log = self.log
            position = next((i for i, e in enumerate(log) if e.rv > since), len(log))
        if expired:
            yield {"type": "ERROR", "object": status_body(410, "Expired", "too old resource version")}
            return
        while True:
            with self.cond:
                pending = log[position:]
                position = len(log)
                if not pending:
                    if log is not self.log or self.closing:
                        return  # compacted (a new log) or shutting down: the watch ends, the client re-watches
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self.cond.wait(min(remaining, 0.2))
                    continue
            for entry in (e for e in pending if e.resource == resource):
                if entry.type == "ERROR":
                    yield {"type": "ERROR", "object": entry.obj}
                    return
                if entry.type == "BOOKMARK":
                    if bookmarks:
                        yield {"type": "BOOKMARK", "object": entry.obj}
                    continue
                event_type = _seen_as(entry, fields=fields, labels=labels)
                if event_type:
                    yield {"type": event_type, "object": entry.obj}


def _seen_as(entry: Entry, *, fields: str | None, labels: str | None) -> str | None:
    """The event a selecting watch sees: an object entering the selection is ADDED, one leaving it DELETED."""

    def selected(obj: Obj | None) -> bool:
        return obj is not None and field_matches(obj, fields) and label_matches(obj, labels)

    now, before = selected(entry.obj), selected(entry.old)
    if entry.type == "DELETED":
        return "DELETED" if now else None
    if now:
        return "MODIFIED" if before else "ADDED"
    return "DELETED" if before else None


def _get_path(obj: Obj, path: str) -> Any:
    value: Any = obj
    for key in path.strip(".").split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _set_path(obj: Obj, path: str, value: Any) -> None:
    *parents, last = path.strip(".").split(".")
    for key in parents:
        obj = obj.setdefault(key, {})
    obj[last] = value


def _check_status(resource: str, obj: Obj) -> None:
    """The CRD's required status keys, as kube-apiserver's schema validation holds a status write to them."""
    spec = RESOURCES[resource]
    missing = [key for key in spec.status_required if key not in (obj.get("status") or {})]
    if missing:
        name = obj["metadata"]["name"]
        fields = ", ".join(f"status.{key}: Required value" for key in missing)
        raise StatusError(422, "Invalid", f'{spec.kind} "{name}" is invalid: {fields}')


def _check_gates(current: Obj, updated: Obj) -> None:
    had = {g.get("name") for g in (current.get("spec") or {}).get("schedulingGates") or []}
    has = {g.get("name") for g in (updated.get("spec") or {}).get("schedulingGates") or []}
    if added := sorted(has - had):
        message = (
            f"spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate '{added[0]}'"
        )
        raise StatusError(422, "Invalid", message)
