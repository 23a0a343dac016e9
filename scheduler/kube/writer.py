"""``KubeClusterWriter``: the extender's writes to a real API server — bindings, PodGang status, Events,
nominations, evictions — as bare JSON requests through ``scheduler.kube.http.ApiHttp``.

Every failure becomes a ``WriteError`` whose message a person can act on, because kube-scheduler copies a bind
error verbatim into the pod's ``FailedScheduling`` event: say what was refused, why, and what fixes it.
"""

from __future__ import annotations

import itertools
import json
import logging
import socket
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from kubernetes.client import ApiClient

from api.grove import SCHEDULER_API_PATH, SCHEDULER_API_VERSION
from scheduler.kube.connect import WRITE_TIMEOUT
from scheduler.kube.errors import WriteError
from scheduler.kube.http import ApiHttp, ApiUnreachable, Reply, Request
from scheduler.kube.nominations import FIELD_MANAGER, Nominated, Nomination, NotSent, Wanted

__all__ = ["KubeClusterWriter"]

log = logging.getLogger(__name__)

COMPONENT = "grove-extender"
_MESSAGE_LIMIT = 1024  # the API server truncates longer event messages anyway; keep the start, which says why
_MERGE_PATCH = "application/merge-patch+json"
_JSON_PATCH = "application/json-patch+json"
# A nomination that lost a race is no news: the pod was deleted (404), re-created (the UID test: 422) or bound
# (nominatedNodeName may not be set on a bound pod: 422) between the plan and the write.
_NOMINATION_RACES = frozenset({404, 409, 422})


def _api_message(reply: Reply) -> str:
    """The API server's own sentence from its Status body, else the HTTP status."""
    try:
        body = json.loads(reply.body or b"null")
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])
    return f"HTTP {reply.status}"


def write_error(action: str, failure: Reply | ApiUnreachable, *, timeout: float) -> WriteError:
    """Translate a refusal or a missing answer into a ``WriteError`` that says what to do about it; its ``status``
    is the HTTP status, None when no answer came."""
    if isinstance(failure, ApiUnreachable):
        if failure.timed_out:
            return WriteError(f"{action}: the API server did not answer within {timeout:g}s; retry later")
        return WriteError(f"{action}: cannot reach the API server ({failure})")
    status, said = failure.status, _api_message(failure)
    if status == 404:
        message = f"{action}: not found ({said}); it was deleted meanwhile, nothing to retry"
    elif status == 409:
        message = f"{action}: conflict ({said}); another writer got there first"
    elif status == 403:
        message = (
            f"{action}: forbidden ({said}); grant the extender's ServiceAccount this permission "
            "(deploy/base/extender-rbac.yaml)"
        )
    elif status == 401:
        message = f"{action}: unauthorized ({said}); the extender's credentials are missing or expired"
    elif status in (400, 422):
        message = f"{action}: rejected as invalid ({said})"
    elif status == 429 and "disruption budget" in said.lower():
        message = f"{action}: refused by a PodDisruptionBudget ({said}); it is asked again later"
    elif status == 429 or status >= 500:
        message = f"{action}: API server unavailable (HTTP {status}: {said}); retry later"
    else:
        message = f"{action}: HTTP {status}: {said}"
    return WriteError(message, status=status)


def _stamp(moment: datetime) -> str:
    """RFC 3339 in UTC, whole seconds (what core/v1 Event timestamps hold)."""
    return moment.astimezone(UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


class KubeClusterWriter:
    """Implements ``scheduler.extender.cluster_writer.ClusterWriter`` with the connection settings of ``api_client``
    (the one the watches use). ``bind`` is awaited on the caller's event loop; the others block the calling thread."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        instance: str | None = None,
        timeout: tuple[float, float] = WRITE_TIMEOUT,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        configuration = api_client.configuration
        self._http = ApiHttp(
            configuration, timeout=timeout, pool_size=configuration.connection_pool_maxsize, user_agent=COMPONENT
        )
        self._instance = instance or socket.gethostname()
        self._timeout = timeout
        self._clock = clock
        self._seq = itertools.count()

    def close(self) -> None:
        """End the connections of the blocking writes (status, Events)."""
        self._http.close()

    async def aclose(self) -> None:
        """End the running loop's connections (those of ``bind``); call before the loop ends."""
        await self._http.aclose()

    def _check(
        self, action: str, outcome: Reply | ApiUnreachable, started: float, *, expected: frozenset[int] = frozenset()
    ) -> None:
        """Raise ``WriteError`` unless the write succeeded; ``expected``: refusals logged at debug, not warning."""
        if isinstance(outcome, Reply) and 200 <= outcome.status < 300:
            log.debug("write ok action=%r seconds=%.4f", action, time.perf_counter() - started)
            return
        error = write_error(action, outcome, timeout=self._timeout[1])
        level = logging.DEBUG if error.status in expected else logging.WARNING
        log.log(level, "write failed action=%r error=%r", action, str(error))
        raise error

    def _send(self, action: str, request: Request) -> None:
        started = time.perf_counter()
        outcome: Reply | ApiUnreachable
        try:
            outcome = self._http.send(request)
        except ApiUnreachable as err:
            outcome = err
        self._check(action, outcome, started)

    async def bind(self, *, namespace: str, name: str, uid: str, node: str) -> None:
        # The UID makes the binding conditional: a pod deleted and re-created under the same name is not bound.
        metadata = {"name": name, "namespace": namespace, **({"uid": uid} if uid else {})}
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": metadata,
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        action = f"binding pod {namespace}/{name} to node {node}"
        started = time.perf_counter()
        outcome: Reply | ApiUnreachable
        try:
            path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
            outcome = await self._http.request(Request("POST", path, json.dumps(body).encode()))
        except ApiUnreachable as err:
            outcome = err
        self._check(action, outcome, started)

    def patch_podgang_status(self, *, namespace: str, name: str, status: dict[str, Any]) -> None:
        # A merge patch replaces only the keys we send: Grove's own Initialized condition write is a separate patch,
        # and conditions are a list, so callers send the whole list they mean.
        path = f"{SCHEDULER_API_PATH}/namespaces/{namespace}/podgangs/{name}/status"
        body = json.dumps({"status": status}).encode()
        self._send(f"updating status of PodGang {namespace}/{name}", Request("PATCH", path, body, _MERGE_PATCH))

    def evict(self, *, namespace: str, name: str, uid: str, dry_run: bool = False) -> None:
        # The Eviction API rather than a DELETE: PodDisruptionBudgets are honoured (a budget that does not allow it
        # is a 429), and the UID precondition leaves a pod re-created under the same name alone.
        options: dict[str, Any] = {"preconditions": {"uid": uid}} if uid else {}
        if dry_run:
            options["dryRun"] = ["All"]
        body = {
            "apiVersion": "policy/v1",
            "kind": "Eviction",
            "metadata": {"name": name, "namespace": namespace},
            "deleteOptions": options,
        }
        query = "?dryRun=All" if dry_run else ""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction{query}"
        self._send(
            f"{'asking whether it may evict' if dry_run else 'evicting'} pod {namespace}/{name}",
            # A budget's refusal is a 429 with a Retry-After too: the evicter asks again on its own terms.
            Request("POST", path, json.dumps(body).encode(), retry_throttled=False),
        )

    def nominate(self, nominations: Sequence[Nomination], done: Nominated, *, wanted: Wanted = lambda _: True) -> None:
        # A JSON patch, so that the UID can be tested: a pod deleted and re-created under the same name meanwhile is
        # left alone. "" is what an unset nominatedNodeName reads as (the field is omitted when empty).
        requests = [
            Request(
                "PATCH",
                f"/api/v1/namespaces/{n.namespace}/pods/{n.name}/status?fieldManager={FIELD_MANAGER}",
                json.dumps(
                    [
                        {"op": "test", "path": "/metadata/uid", "value": n.uid},
                        # null passes where the field is absent (unset, or cleared: "" is stored as absent)
                        {"op": "test", "path": "/status/nominatedNodeName", "value": n.previous or None},
                        {"op": "add", "path": "/status/nominatedNodeName", "value": n.node},
                    ]
                ).encode(),
                _JSON_PATCH,
            )
            for n in nominations
        ]
        started = time.perf_counter()

        def answered(index: int, outcome: Reply | ApiUnreachable | None) -> None:
            nomination = nominations[index]
            if outcome is None:
                done(nomination, NotSent(nomination))
                return
            try:
                what = f"nominating node {nomination.node}" if nomination.node else "clearing the nominated node"
                self._check(f"{what} for pod {nomination.key}", outcome, started, expected=_NOMINATION_RACES)
            except WriteError as err:
                done(nomination, err)
            else:
                done(nomination, None)

        self._http.submit_each(requests, answered, send=lambda index: wanted(nominations[index]))

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
        # core/v1 rather than events.k8s.io/v1: whole-second timestamps (MicroTime needs exactly six digits).
        moment = self._clock()
        now = _stamp(moment)
        api_version = "v1" if kind == "Pod" else SCHEDULER_API_VERSION
        involved = {"apiVersion": api_version, "kind": kind, "name": name, "namespace": namespace}
        event = {
            "apiVersion": "v1",
            "kind": "Event",
            # Unique per call, like client-go's "<name>.<hex time>", plus a sequence for two events in one microsecond.
            "metadata": {
                "name": f"{name}.{int(moment.timestamp() * 1e6):x}{next(self._seq):x}",
                "namespace": namespace,
            },
            "involvedObject": {**involved, **({"uid": uid} if uid else {})},
            "reason": reason,
            "message": message[:_MESSAGE_LIMIT],
            "type": type,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self._instance,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        path = f"/api/v1/namespaces/{namespace}/events"
        self._send(
            f"recording event {reason} on {kind} {namespace}/{name}", Request("POST", path, json.dumps(event).encode())
        )
