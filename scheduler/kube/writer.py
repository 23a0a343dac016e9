"""``KubeClusterWriter``: the extender's writes to a real API server — bindings, PodGang status, Events.

Every failure becomes a ``WriteError`` whose message a person can act on, because kube-scheduler copies a bind
error verbatim into the pod's ``FailedScheduling`` event: say what was refused, why, and what fixes it.
"""

from __future__ import annotations

import itertools
import json
import logging
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from kubernetes.client import (
    ApiClient,
    CoreV1Api,
    CoreV1Event,
    CustomObjectsApi,
    V1Binding,
    V1EventSource,
    V1ObjectMeta,
    V1ObjectReference,
)
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError, TimeoutError

from api.grove import SCHEDULER_GROUP
from scheduler.cluster_writer import WriteError
from scheduler.kube.connect import WRITE_TIMEOUT

__all__ = ["KubeClusterWriter"]

log = logging.getLogger(__name__)

COMPONENT = "grove-extender"
_MESSAGE_LIMIT = 1024  # the API server truncates longer event messages anyway; keep the start, which says why


def _api_message(err: ApiException) -> str:
    """The API server's own sentence from its Status body, else the HTTP reason."""
    try:
        body = json.loads(err.body or "")
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return str(err.reason or f"HTTP {err.status}")


def write_error(action: str, err: Exception, *, timeout: float) -> WriteError:
    """Translate a client failure into a ``WriteError`` that says what to do about it (and carries the status)."""
    error = _write_error(action, err, timeout=timeout)
    error.status = err.status if isinstance(err, ApiException) else None
    return error


def _write_error(action: str, err: Exception, *, timeout: float) -> WriteError:
    if isinstance(err, ApiException):
        said = _api_message(err)
        if err.status == 404:
            return WriteError(f"{action}: not found ({said}); it was deleted meanwhile, nothing to retry")
        if err.status == 409:
            return WriteError(f"{action}: conflict ({said}); another writer got there first")
        if err.status == 403:
            return WriteError(
                f"{action}: forbidden ({said}); grant the extender's ServiceAccount this permission "
                "(deploy/extender-rbac.yaml)"
            )
        if err.status == 401:
            return WriteError(f"{action}: unauthorized ({said}); the extender's credentials are missing or expired")
        if err.status in (400, 422):
            return WriteError(f"{action}: rejected as invalid ({said})")
        if err.status == 429 or (err.status or 0) >= 500:
            return WriteError(f"{action}: API server unavailable (HTTP {err.status}: {said}); retry later")
        return WriteError(f"{action}: HTTP {err.status}: {said}")
    if isinstance(err, (TimeoutError, socket.timeout)):
        return WriteError(f"{action}: the API server did not answer within {timeout:g}s; retry later")
    return WriteError(f"{action}: cannot reach the API server ({type(err).__name__}: {err})")


class KubeClusterWriter:
    """Implements ``scheduler.cluster_writer.ClusterWriter`` over one shared, pooled ``ApiClient`` (thread-safe:
    urllib3's pool hands each concurrent call its own connection)."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        instance: str | None = None,
        timeout: tuple[float, float] = WRITE_TIMEOUT,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._core = CoreV1Api(api_client)
        self._custom = CustomObjectsApi(api_client)
        self._instance = instance or socket.gethostname()
        self._timeout = timeout
        self._clock = clock
        self._seq = itertools.count()

    def _call(self, action: str, call: Callable[..., Any], **kwargs: Any) -> None:
        started = time.perf_counter()
        try:
            response = call(**kwargs, _preload_content=False, _request_timeout=self._timeout)
        except (ApiException, HTTPError, OSError) as err:
            error = write_error(action, err, timeout=self._timeout[1])
            log.warning("write failed action=%r error=%r", action, str(error))
            raise error from None
        response.drain_conn()  # a pooled connection with an unread body would garble the next request on it
        response.release_conn()
        log.debug("write ok action=%r seconds=%.4f", action, time.perf_counter() - started)

    def bind(self, *, namespace: str, name: str, uid: str, node: str) -> None:
        # The UID makes the binding conditional: a pod deleted and re-created under the same name is not bound.
        body = V1Binding(
            api_version="v1",
            kind="Binding",
            metadata=V1ObjectMeta(name=name, namespace=namespace, uid=uid or None),
            target=V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        self._call(
            f"binding pod {namespace}/{name} to node {node}",
            self._core.create_namespaced_pod_binding,
            name=name,
            namespace=namespace,
            body=body,
        )

    def patch_podgang_status(self, *, namespace: str, name: str, status: dict[str, Any]) -> None:
        self._call(
            f"updating status of PodGang {namespace}/{name}",
            self._custom.patch_namespaced_custom_object_status,
            group=SCHEDULER_GROUP,
            version="v1alpha1",
            namespace=namespace,
            plural="podgangs",
            name=name,
            body={"status": status},
            # A merge patch replaces only the keys we send: Grove's own Initialized condition write is a separate
            # patch, and conditions are a list, so callers send the whole list they mean.
            _content_type="application/merge-patch+json",
        )

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
        # core/v1 rather than events.k8s.io/v1: its timestamps are whole-second RFC 3339, which the client's
        # isoformat() always produces validly (MicroTime needs exactly six fractional digits).
        stamp = self._clock()
        now = stamp.replace(microsecond=0)
        api_version = "v1" if kind == "Pod" else f"{SCHEDULER_GROUP}/v1alpha1"
        event = CoreV1Event(
            # Unique per call, like client-go's "<name>.<hex time>", plus a sequence for two events in one microsecond.
            metadata=V1ObjectMeta(
                name=f"{name}.{int(stamp.timestamp() * 1e6):x}{next(self._seq):x}", namespace=namespace
            ),
            involved_object=V1ObjectReference(
                api_version=api_version, kind=kind, name=name, namespace=namespace, uid=uid or None
            ),
            reason=reason,
            message=message[:_MESSAGE_LIMIT],
            type=type,
            source=V1EventSource(component=COMPONENT),
            reporting_component=COMPONENT,
            reporting_instance=self._instance,
            first_timestamp=now,
            last_timestamp=now,
            count=1,
        )
        self._call(
            f"recording event {reason} on {kind} {namespace}/{name}",
            self._core.create_namespaced_event,
            namespace=namespace,
            body=event,
        )
