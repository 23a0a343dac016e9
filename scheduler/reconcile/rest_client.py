"""``ReconcileApi`` over the official Kubernetes client, kept thin: REST paths and JSON through one ``ApiClient``.

The generated typed API classes are not used: objects must round-trip as raw JSON (a user's pod spec, another
controller's PodGang status), and one request helper keeps every call's path, verb and content type visible here.
Changes arrive through ``scheduler.kube.informer``: one informer per collection whose changes are work, each change
queued as the key of the PodCliqueSet it concerns.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from kubernetes import client
from urllib3.exceptions import HTTPError

from api.grove import GROVE_API_PATH, LABEL_MANAGED_BY, LABEL_PART_OF, LABEL_PODCLIQUE, MANAGED_BY, SCHEDULER_API_PATH
from scheduler.kube.decoding import EventType, JsonDecoder
from scheduler.kube.informer import Informer, start_informers
from scheduler.kube.listing import (
    ALL_PODS,
    HORIZONTAL_POD_AUTOSCALERS,
    PODCLIQUES,
    PODCLIQUESCALINGGROUPS,
    PODCLIQUESETS,
    PODGANGS,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    SERVICES,
    Resource,
)
from scheduler.kube.rate_limit import TokenBucket
from scheduler.reconcile.cache import OwnedCache
from scheduler.reconcile.client import (
    ApiError,
    Conflict,
    KubeObject,
    NotFound,
    ObjectKey,
    OwnedKind,
    StatusKind,
)

__all__ = ["WATCHED_KINDS", "KubeApi"]

log = logging.getLogger(__name__)

_RBAC = "/apis/rbac.authorization.k8s.io/v1"
_RESOURCE = "/apis/resource.k8s.io/v1"
_COLLECTIONS: dict[str, tuple[str, str]] = {  # kind → (API prefix, resource)
    "Pod": ("/api/v1", "pods"),
    "Service": ("/api/v1", "services"),
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    "Secret": ("/api/v1", "secrets"),
    "ResourceClaim": (_RESOURCE, "resourceclaims"),
    "ResourceClaimTemplate": (_RESOURCE, "resourceclaimtemplates"),
    "ComputeDomain": ("/apis/resource.nvidia.com/v1beta1", "computedomains"),
    "PodGang": (SCHEDULER_API_PATH, "podgangs"),
    "PodCliqueSet": (GROVE_API_PATH, "podcliquesets"),
    "PodClique": (GROVE_API_PATH, "podcliques"),
    "PodCliqueScalingGroup": (GROVE_API_PATH, "podcliquescalinggroups"),
    "HorizontalPodAutoscaler": ("/apis/autoscaling/v2", "horizontalpodautoscalers"),
    "Role": (_RBAC, "roles"),
    "RoleBinding": (_RBAC, "rolebindings"),
}
_MERGE = "application/merge-patch+json"
_GROVE_PODS = f"{LABEL_MANAGED_BY}={MANAGED_BY},{LABEL_PODCLIQUE}"
_OURS = f"{LABEL_MANAGED_BY}={MANAGED_BY}"
# What the informers watch, and with which label selector: every kind a pass reads, so a pass reads none of them
# over HTTP. Each is also work: a change to one (`kubectl scale` of a PodClique, an HPA's write, a Service someone
# deleted) is a pass for the PodCliqueSet it is part of. The kinds only some PodCliqueSets have (ResourceClaims,
# ComputeDomains) are listed by the passes that need them.
_WATCHED: tuple[tuple[Resource, str | None], ...] = (
    (PODCLIQUESETS, None),
    (PODCLIQUES, _OURS),
    (PODCLIQUESCALINGGROUPS, _OURS),
    (PODGANGS, _OURS),
    (ALL_PODS, _GROVE_PODS),
    (SERVICES, _OURS),
    (SERVICE_ACCOUNTS, _OURS),
    (ROLES, _OURS),
    (ROLE_BINDINGS, _OURS),
    (HORIZONTAL_POD_AUTOSCALERS, _OURS),
)
WATCHED_KINDS = tuple(resource.kind for resource, _ in _WATCHED)


def _path(kind: str, namespace: str | None, name: str | None = None, subresource: str | None = None) -> str:
    prefix, resource = _COLLECTIONS[kind]
    path = f"{prefix}/namespaces/{namespace}/{resource}" if namespace else f"{prefix}/{resource}"
    if name:
        path += f"/{name}"
    return f"{path}/{subresource}" if subresource else path


class KubeApi:
    """The reconciler's API over HTTP. ``namespace`` limits it to one namespace (None: all namespaces)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        namespace: str | None = None,
        timeout: float = 10.0,
        rate: TokenBucket | None = None,
    ) -> None:
        self._client = api_client
        self._namespace = namespace
        self._timeout = timeout
        self._rate = rate  # None: unlimited
        self._changes: queue.Queue[ObjectKey] = queue.Queue()
        self.cache = OwnedCache(WATCHED_KINDS)  # what the passes read

    # --- requests ------------------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
    ) -> Any:
        if self._rate is not None:
            self._rate.take()
        headers = {"Accept": "application/json", "Content-Type": content_type}
        prepared = self._client.param_serialize(
            method=method,
            resource_path=path,
            query_params=list((query or {}).items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        verb, url, header_params, payload, post_params = prepared
        try:
            response = self._client.call_api(
                verb,
                url,
                header_params=header_params,
                body=payload,
                post_params=post_params,
                _request_timeout=self._timeout,
            )
        except client.ApiException as err:  # TLS failures come back as status 0
            raise ApiError(int(err.status or 0), str(err.reason)) from err
        except (HTTPError, OSError) as err:  # refused, reset, timed out: status 0, so callers retry
            raise ApiError(0, f"{method} {path}: {type(err).__name__}: {err}") from err
        try:
            data: bytes = response.read()  # type: ignore[no-untyped-call]
        finally:
            response.response.release_conn()  # back to the pool for the next request
        if response.status >= 400:
            raise _error(response.status, data)
        return json.loads(data) if data else {}

    def _get(self, path: str) -> KubeObject | None:
        try:
            result: KubeObject = self._send("GET", path)
        except NotFound:
            return None
        return result

    def _list(self, kind: str, namespace: str | None, selector: str | None = None) -> list[KubeObject]:
        query = {"labelSelector": selector} if selector else None
        document = self._send("GET", _path(kind, namespace), query=query)
        items: list[KubeObject] = document.get("items") or []
        prefix, _ = _COLLECTIONS[kind]
        for item in items:  # list items of built-in kinds come without apiVersion/kind
            item.setdefault("kind", kind)
            item.setdefault("apiVersion", prefix.removeprefix("/apis/").removeprefix("/api/"))
        return items

    # --- ReconcileApi --------------------------------------------------------------------------------------

    def list_podcliquesets(self) -> list[KubeObject]:
        return self._list("PodCliqueSet", self._namespace)

    def get_podcliqueset(self, namespace: str, name: str) -> KubeObject | None:
        if self.cache.serves("PodCliqueSet") and (cached := self.cache.get("PodCliqueSet", namespace, name)):
            return cached
        # Not in the cache: the pass tears down what it owned, so ask the API server rather than a view that may
        # trail it (a new leader's watch behind the one that made the children).
        return self._get(_path("PodCliqueSet", namespace, name))

    def patch_podcliqueset_status(self, namespace: str, name: str, *, status: KubeObject) -> None:
        path = _path("PodCliqueSet", namespace, name, "status")
        self.cache.wrote("PodCliqueSet", self._send("PATCH", path, body={"status": status}, content_type=_MERGE))

    def get_topology_binding(self, name: str) -> KubeObject | None:
        return self._get(f"{GROVE_API_PATH}/clustertopologybindings/{name}")

    def get_resource_claim_template(self, namespace: str, name: str) -> KubeObject | None:
        return self._get(_path("ResourceClaimTemplate", namespace, name))

    def serves(self, kind: str) -> bool:
        """Whether the API server serves ``kind`` (discovery, which every authenticated identity may read): MNNVL
        needs the NVIDIA DRA driver's ComputeDomain."""
        prefix, resource = _COLLECTIONS[kind]
        document = self._get(prefix) or {}
        return any(item.get("name") == resource for item in document.get("resources") or [])

    def list_owned(self, kind: OwnedKind, *, namespace: str, part_of: str) -> list[KubeObject]:
        if self.cache.serves(kind):
            return self.cache.list(kind, namespace=namespace, part_of=part_of)
        return self._list(kind, namespace, f"{LABEL_PART_OF}={part_of}")

    def create(self, obj: KubeObject) -> KubeObject:
        result: KubeObject = self._send("POST", _path(obj["kind"], obj["metadata"]["namespace"]), body=obj)
        self.cache.wrote(obj["kind"], result)
        return result

    def replace(self, obj: KubeObject) -> KubeObject:
        meta = obj["metadata"]
        result: KubeObject = self._send("PUT", _path(obj["kind"], meta["namespace"], meta["name"]), body=obj)
        self.cache.wrote(obj["kind"], result)
        return result

    def patch_status(
        self, kind: StatusKind, *, namespace: str, name: str, status: KubeObject, resource_version: str
    ) -> KubeObject:
        body = {"metadata": {"resourceVersion": resource_version}, "status": status}
        result: KubeObject = self._send("PATCH", _path(kind, namespace, name, "status"), body=body, content_type=_MERGE)
        self.cache.wrote(kind, result)
        return result

    def set_pod_scheduling_gates(
        self, namespace: str, name: str, *, gates: list[KubeObject], resource_version: str | None
    ) -> None:
        body: KubeObject = {"spec": {"schedulingGates": gates}}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        self.cache.wrote("Pod", self._send("PATCH", _path("Pod", namespace, name), body=body, content_type=_MERGE))

    def delete(self, kind: OwnedKind, *, namespace: str, name: str) -> None:
        answer: Any = None
        with contextlib.suppress(NotFound):  # already gone is what we wanted
            answer = self._send("DELETE", _path(kind, namespace, name), body={"propagationPolicy": "Background"})
        self.cache.deleted(kind, namespace, name, answer if isinstance(answer, dict) else None)

    def record_event(
        self,
        *,
        involved: KubeObject,
        reason: str,
        message: str,
        type: Literal["Normal", "Warning"],
    ) -> None:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{involved['name']}.", "namespace": involved["namespace"]},
            "involvedObject": involved,
            "reason": reason,
            "message": message[:1024],
            "type": type,
            "source": {"component": "grove-extender-reconciler"},
            "reportingComponent": "grove-extender-reconciler",
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self._send("POST", f"/api/v1/namespaces/{involved['namespace']}/events", body=event)
        except ApiError as err:  # an event is a courtesy: losing one must not fail the reconcile
            log.warning("event not recorded reason=%s error=%s", reason, err)

    def changes(self, timeout: float) -> set[ObjectKey]:
        keys: set[ObjectKey] = set()
        try:
            keys.add(self._changes.get(timeout=timeout) if timeout > 0 else self._changes.get_nowait())
            while True:
                keys.add(self._changes.get_nowait())
        except queue.Empty:
            return keys

    # --- watches -------------------------------------------------------------------------------------------

    def start_watches(
        self, stop: threading.Event, *, on_synced: Callable[[], None] | None = None
    ) -> list[threading.Thread]:
        """One informer per kind a pass reads (``_WATCHED``), on daemon threads that end promptly on ``stop``;
        ``on_synced`` runs once every one of them has listed once. Until a kind has listed, passes read it over
        HTTP. With a ``namespace``, each lists and watches that namespace only (a Role there is all it needs)."""
        informers: list[Informer[KubeObject]] = []
        for resource, selector in _WATCHED:
            informer = Informer(
                api_client=self._client,
                resource=resource,
                decoder=JsonDecoder(stamp=resource.stamp),
                namespace=self._namespace,
                label_selector=selector,
            )
            informer.add_handler(self.cache.handler(resource.kind))  # first: the pass a change wakes reads it
            informer.add_handler(_PodCliqueSetKeys(resource.kind, self._changes))
            informers.append(informer)
        return start_informers(informers, stop, on_synced=on_synced)


class _PodCliqueSetKeys:
    """An informer's handler: each object listed or changed is work for the PodCliqueSet it names (its own name,
    or its ``part-of`` label).

    A relist after an expired watch carries no deletions: a PodCliqueSet whose pods were all deleted in the gap is
    named by no listed object. So a list names every PodCliqueSet the previous list or any event since named, as
    well as the listed ones, each once."""

    def __init__(self, kind: str, changes: queue.Queue[ObjectKey]) -> None:
        self._kind = kind
        self._changes = changes
        self._named: set[ObjectKey] = set()

    def on_list(self, objects: Sequence[KubeObject]) -> None:
        listed = {key for key in map(self._key, objects) if key is not None}
        for key in sorted(listed | self._named):
            self._changes.put(key)
        self._named = listed

    def on_event(self, event_type: EventType, obj: KubeObject) -> None:
        key = self._key(obj)
        if key is not None:
            self._named.add(key)
            self._changes.put(key)

    def _key(self, obj: KubeObject) -> ObjectKey | None:
        meta = obj.get("metadata") or {}
        name = meta.get("name") if self._kind == "PodCliqueSet" else (meta.get("labels") or {}).get(LABEL_PART_OF)
        return (meta.get("namespace", ""), name) if name else None


def _error(status: int, body: bytes) -> ApiError:
    try:
        message = str(json.loads(body).get("message", "")) or body.decode(errors="replace")
    except ValueError:
        message = body.decode(errors="replace")
    if status == 404:
        return NotFound(status, message)
    if status == 409:
        return Conflict(status, message)
    return ApiError(status, message)
