"""``ReconcileApi`` over the official Kubernetes client, kept thin: REST paths and JSON through one ``ApiClient``.

The generated typed API classes are not used: objects must round-trip as raw JSON (a user's pod spec, another
controller's PodGang status), and one request helper keeps every call's path, verb and content type visible here.
Watches run in daemon threads, turn events into PodCliqueSet keys, and relist on expiry (410 Gone) or any error.
"""

from __future__ import annotations

import contextlib
import json
import logging
import queue
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, Literal

from kubernetes import client
from urllib3.exceptions import HTTPError

from api.grove import GROVE_API_PATH, LABEL_PODCLIQUE, SCHEDULER_API_PATH
from scheduler.reconcile.client import (
    ApiError,
    Conflict,
    KubeObject,
    NotFound,
    ObjectKey,
    OwnedKind,
    StatusKind,
)
from scheduler.reconcile.desired.names import LABEL_MANAGED_BY, LABEL_PART_OF, MANAGED_BY

__all__ = ["KubeApi"]

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
_WATCH_SECONDS = 300


def _path(kind: str, namespace: str | None, name: str | None = None, subresource: str | None = None) -> str:
    prefix, resource = _COLLECTIONS[kind]
    path = f"{prefix}/namespaces/{namespace}/{resource}" if namespace else f"{prefix}/{resource}"
    if name:
        path += f"/{name}"
    return f"{path}/{subresource}" if subresource else path


class KubeApi:
    """The reconciler's API over HTTP. ``namespace`` limits it to one namespace (None: all namespaces)."""

    def __init__(self, api_client: client.ApiClient, *, namespace: str | None = None, timeout: float = 10.0) -> None:
        self._client = api_client
        self._namespace = namespace
        self._timeout = timeout
        self._changes: queue.Queue[ObjectKey] = queue.Queue()
        self._streams: set[Any] = set()  # open watch responses, closed on stop to unblock their readers
        # Re-entrant: initc's SIGTERM handler calls close_streams on the main thread, which may hold it in _watch.
        self._streams_lock = threading.RLock()
        self._closed = False  # set by close_streams: a watch opened afterwards ends at once

    # --- requests ------------------------------------------------------------------------------------------

    def _send(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        stream: bool = False,
    ) -> Any:
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
        timeout = (self._timeout, _WATCH_SECONDS + 30) if stream else self._timeout
        try:
            response = self._client.call_api(
                verb, url, header_params=header_params, body=payload, post_params=post_params, _request_timeout=timeout
            )
        except client.ApiException as err:  # TLS failures come back as status 0
            raise ApiError(int(err.status or 0), str(err.reason)) from err
        except (HTTPError, OSError) as err:  # refused, reset, timed out: status 0, so callers retry
            raise ApiError(0, f"{method} {path}: {type(err).__name__}: {err}") from err
        if stream and response.status < 400:
            return response.response  # unread: the caller streams it
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
        return self._get(_path("PodCliqueSet", namespace, name))

    def patch_podcliqueset_status(self, namespace: str, name: str, *, status: KubeObject) -> None:
        path = _path("PodCliqueSet", namespace, name, "status")
        self._send("PATCH", path, body={"status": status}, content_type=_MERGE)

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
        return self._list(kind, namespace, f"{LABEL_PART_OF}={part_of}")

    def create(self, obj: KubeObject) -> KubeObject:
        result: KubeObject = self._send("POST", _path(obj["kind"], obj["metadata"]["namespace"]), body=obj)
        return result

    def replace(self, obj: KubeObject) -> KubeObject:
        meta = obj["metadata"]
        result: KubeObject = self._send("PUT", _path(obj["kind"], meta["namespace"], meta["name"]), body=obj)
        return result

    def patch_status(
        self, kind: StatusKind, *, namespace: str, name: str, status: KubeObject, resource_version: str
    ) -> KubeObject:
        body = {"metadata": {"resourceVersion": resource_version}, "status": status}
        result: KubeObject = self._send("PATCH", _path(kind, namespace, name, "status"), body=body, content_type=_MERGE)
        return result

    def set_pod_scheduling_gates(
        self, namespace: str, name: str, *, gates: list[KubeObject], resource_version: str
    ) -> None:
        body = {"metadata": {"resourceVersion": resource_version}, "spec": {"schedulingGates": gates}}
        self._send("PATCH", _path("Pod", namespace, name), body=body, content_type=_MERGE)

    def delete(self, kind: OwnedKind, *, namespace: str, name: str) -> None:
        with contextlib.suppress(NotFound):  # already gone is what we wanted
            self._send("DELETE", _path(kind, namespace, name), body={"propagationPolicy": "Background"})

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

    def start_watches(self, stop: threading.Event) -> list[threading.Thread]:
        """One daemon thread per watched collection, plus one that unblocks them on ``stop`` so they end promptly."""
        grove_pods = f"{LABEL_MANAGED_BY}={MANAGED_BY},{LABEL_PODCLIQUE}"
        ours = f"{LABEL_MANAGED_BY}={MANAGED_BY}"
        # PodCliques and PodCliqueScalingGroups: `kubectl scale` and HPAs change them, and each change is work.
        targets = [
            ("PodCliqueSet", None),
            ("PodClique", ours),
            ("PodCliqueScalingGroup", ours),
            ("PodGang", ours),
            ("Pod", grove_pods),
        ]
        threads = [
            threading.Thread(target=self._watch_forever, args=(kind, selector, stop), name=f"watch-{kind}", daemon=True)
            for kind, selector in targets
        ]
        threads.append(threading.Thread(target=self._close_on_stop, args=(stop,), name="watch-stopper", daemon=True))
        for thread in threads:
            thread.start()
        return threads

    def _close_on_stop(self, stop: threading.Event) -> None:
        stop.wait()
        self.close_streams()

    def _watch_forever(self, kind: str, selector: str | None, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                version = self._relist(kind, selector)
                for event in self._watch(kind, selector, version):
                    if stop.is_set():
                        return
                    self._emit(kind, event.get("object") or {})
            except (ApiError, OSError, ValueError, HTTPError) as err:  # HTTPError: urllib3's cut-off stream
                if stop.is_set():
                    return
                log.warning("watch restarting kind=%s error=%s", kind, err)
                stop.wait(1.0)

    def list_pods(self, namespace: str, selector: str) -> tuple[list[KubeObject], str]:
        """Pods in ``namespace`` matching ``selector``, and the list's resourceVersion to watch from."""
        document = self._send("GET", _path("Pod", namespace), query={"labelSelector": selector})
        return document.get("items") or [], str((document.get("metadata") or {}).get("resourceVersion", ""))

    def watch_pods(self, namespace: str, selector: str, version: str) -> Iterator[KubeObject]:
        """Watch events (``{type, object}``) for those pods from ``version`` until the server ends the watch;
        ``ApiError`` on 410 Gone or any refusal (relist then). ``close_streams`` ends it from another thread."""
        return self._watch("Pod", selector, version, namespace=namespace)

    def close_streams(self) -> None:
        """Unblock every open watch (it ends with an error its reader handles) and end at once any watch opened
        from now on: a stop that lands while a watch is being set up would otherwise wait for its timeout."""
        with self._streams_lock:
            self._closed = True
            streams = list(self._streams)
        for response in streams:
            shutdown = getattr(response, "shutdown", None)  # urllib3 ≥ 2.3 unblocks a read in another thread
            with contextlib.suppress(Exception):  # the stream may have ended on its own meanwhile
                (shutdown or response.close)()

    def _relist(self, kind: str, selector: str | None) -> str:
        query = {"labelSelector": selector} if selector else None
        document = self._send("GET", _path(kind, self._namespace), query=query)
        for item in document.get("items") or []:
            self._emit(kind, item)
        return str((document.get("metadata") or {}).get("resourceVersion", ""))

    def _watch(
        self, kind: str, selector: str | None, version: str, *, namespace: str | None = None
    ) -> Iterator[KubeObject]:
        query = {"watch": "true", "resourceVersion": version, "timeoutSeconds": str(_WATCH_SECONDS)}
        query["allowWatchBookmarks"] = "true"
        if selector:
            query["labelSelector"] = selector
        response = self._send("GET", _path(kind, namespace or self._namespace), query=query, stream=True)
        with self._streams_lock:
            closed = self._closed
            if not closed:
                self._streams.add(response)
        if closed:
            with contextlib.suppress(Exception):
                response.close()
            return
        try:
            buffer = b""
            # amt=None: yield each chunk of the chunked response as it arrives, not once 4 KiB have piled up.
            for chunk in response.stream(amt=None, decode_content=False):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in filter(bytes.strip, lines):
                    event = json.loads(line)
                    if event.get("type") == "ERROR":  # 410 Gone and friends: relist
                        status = event.get("object") or {}
                        raise ApiError(int(status.get("code", 0)), str(status.get("message", "watch error")))
                    if event.get("type") != "BOOKMARK":
                        yield event
        finally:
            with self._streams_lock:
                self._streams.discard(response)
            with contextlib.suppress(Exception):
                response.release_conn()

    def _emit(self, kind: str, obj: KubeObject) -> None:
        meta = obj.get("metadata") or {}
        name = meta.get("name") if kind == "PodCliqueSet" else (meta.get("labels") or {}).get(LABEL_PART_OF)
        if name:
            self._changes.put((meta.get("namespace", ""), name))


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
