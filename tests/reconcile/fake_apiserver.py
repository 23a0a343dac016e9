"""A tiny Kubernetes API server on 127.0.0.1 for exercising ``scheduler.reconcile.kube`` over real HTTP.

It serves exactly the REST paths the reconciler uses, backed by ``InMemoryApi`` (so its semantics — 404, 409 on a
taken name or a stale resourceVersion, status subresources — are the same ones the controller tests rely on), and
answers errors with a ``v1.Status`` body as kube-apiserver does. Watches stream newline-delimited events for at most
``timeoutSeconds`` (capped short), then close. Every request is logged for assertions on verbs, paths and headers.
"""

from __future__ import annotations

import contextlib
import copy
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from scheduler.reconcile.api import ApiError
from scheduler.reconcile.memory import InMemoryApi

_RESOURCES = {"pods": "Pod", "services": "Service", "podgangs": "PodGang", "podcliquesets": "PodCliqueSet"}
_BUILTIN = {"Pod", "Service"}
_PATH = re.compile(
    r"^/(?:api/v1|apis/[a-z.]+/v1alpha1)(?:/namespaces/(?P<ns>[^/]+))?/(?P<resource>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>status))?$"
)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


class FakeApiServer:
    def __init__(self, api: InMemoryApi, *, watch_cap_seconds: float = 1.0) -> None:
        self.api = api
        self.lock = threading.RLock()
        self.requests: list[Request] = []
        self.fail_next: dict[str, int] = {}  # "METHOD resource" → HTTP status to answer once
        self.watch_cap = watch_cap_seconds
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive and chunked watches, as kube-apiserver speaks

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                return

            def _handle(self) -> None:
                server.handle(self)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False  # type: ignore[attr-defined]
        self.closing = threading.Event()  # ends open watches when the server stops
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @contextmanager
    def running(self) -> Iterator[FakeApiServer]:
        thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.closing.set()
            self.httpd.shutdown()
            self.httpd.server_close()
            thread.join(timeout=5)

    # --- dispatch ------------------------------------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        headers = {key.lower(): value for key, value in handler.headers.items()}  # HTTP header names are case-blind
        request = Request(handler.command, url.path, query, headers, body)
        with self.lock:
            self.requests.append(request)
        try:
            if query.get("watch") == "true":
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client hung up: done
                    self._watch(handler, request)
                return
            status, payload = self._route(request)
        except ApiError as err:
            status, payload = err.status, _status_body(err.status, str(err).split(": ", 1)[-1])
        data = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _route(self, request: Request) -> tuple[int, Any]:
        if request.path.startswith("/apis/grove.io/v1alpha1/clustertopologybindings/"):
            found = self.api.get_topology_binding(request.path.rsplit("/", 1)[1])
            if found is None:
                raise ApiError(404, "clustertopologybindings not found")
            return 200, found
        if request.path.endswith("/events") and request.method == "POST":
            with self.lock:
                event = request.body
                self.api.record_event(
                    involved=event["involvedObject"],
                    reason=event["reason"],
                    message=event["message"],
                    type=event["type"],
                )
            return 201, event
        match = _PATH.match(request.path)
        if match is None or match["resource"] not in _RESOURCES:
            raise ApiError(404, f"the server could not find the requested resource {request.path}")
        kind, namespace, name, sub = _RESOURCES[match["resource"]], match["ns"] or "", match["name"], match["sub"]
        injected = self.fail_next.pop(f"{request.method} {match['resource']}", None)
        if injected:
            raise ApiError(injected, f"injected failure {injected}")
        with self.lock:
            return self._apply(request, kind=kind, namespace=namespace, name=name, sub=sub)

    def _apply(
        self, request: Request, *, kind: str, namespace: str, name: str | None, sub: str | None
    ) -> tuple[int, Any]:
        api, body, method = self.api, request.body, request.method
        merge = request.headers.get("content-type") == "application/merge-patch+json"
        if method == "GET" and name is None:
            items = self._select(kind, namespace, request.query.get("labelSelector", ""))
            version = str(max((int(o["metadata"]["resourceVersion"]) for o in api.objects.values()), default=0))
            return 200, {
                "kind": f"{kind}List",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": version},
                "items": items,
            }
        if method == "GET":
            found = api.objects.get((kind, namespace, name))
            if found is None:
                raise ApiError(404, f'{kind.lower()}s "{name}" not found')
            return 200, copy.deepcopy(found)
        if method == "POST":
            if body["metadata"].get("namespace", namespace) != namespace:
                raise ApiError(
                    400, "the namespace of the provided object does not match the namespace sent on the request"
                )
            return 201, api.create(body)
        assert name is not None
        if method == "PUT" and kind == "PodGang":
            return 200, api.replace_podgang(body)
        if method == "PATCH" and not merge:
            raise ApiError(415, f"unsupported patch type {request.headers.get('Content-Type')}")
        version = (body or {}).get("metadata", {}).get("resourceVersion", "")
        if method == "PATCH" and kind == "PodCliqueSet" and sub == "status":
            api.patch_podcliqueset_status(namespace, name, status=body["status"])
            return 200, api.get_podcliqueset(namespace, name)
        if method == "PATCH" and kind == "PodGang" and sub == "status":
            return 200, api.patch_podgang_status(namespace, name, status=body["status"], resource_version=version)
        if method == "PATCH" and kind == "Pod":
            gates = body["spec"]["schedulingGates"]
            api.set_pod_scheduling_gates(namespace, name, gates=gates, resource_version=version)
            return 200, copy.deepcopy(api.objects[("Pod", namespace, name)])
        if method == "DELETE":
            if (kind, namespace, name) not in api.objects:
                raise ApiError(404, f'{kind.lower()}s "{name}" not found')
            api.delete(kind, namespace=namespace, name=name)  # type: ignore[arg-type]
            return 200, _status_body(200, "deleted")
        raise ApiError(405, f"method {method} not allowed on {request.path}")

    def _select(self, kind: str, namespace: str, selector: str) -> list[Any]:
        items = []
        for (k, ns, _), obj in sorted(self.api.objects.items()):
            if k != kind or (namespace and ns != namespace) or not _matches(obj, selector):
                continue
            item = copy.deepcopy(obj)
            if kind in _BUILTIN:  # kube-apiserver leaves these out of list items of built-in kinds
                item.pop("kind", None)
                item.pop("apiVersion", None)
            items.append(item)
        return items

    def _watch(self, handler: BaseHTTPRequestHandler, request: Request) -> None:
        match = _PATH.match(request.path)
        assert match is not None
        kind, namespace = _RESOURCES[match["resource"]], match["ns"] or ""
        since = int(request.query.get("resourceVersion") or 0)
        deadline = time.monotonic() + min(float(request.query.get("timeoutSeconds", 1)), self.watch_cap)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.close_connection = True
        selector = request.query.get("labelSelector", "")
        with self.lock:
            seen = {o["metadata"]["name"]: o for o in self._select(kind, namespace, selector)}
        seen = {n: o for n, o in seen.items() if int(o["metadata"]["resourceVersion"]) <= since}
        while time.monotonic() < deadline and not self.closing.is_set():
            with self.lock:
                current = {o["metadata"]["name"]: o for o in self._select(kind, namespace, selector)}
            events = []
            for obj_name, obj in current.items():
                previous = seen.get(obj_name)
                if previous is None or previous["metadata"]["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                    events.append({"type": "ADDED" if previous is None else "MODIFIED", "object": obj})
                    seen[obj_name] = obj
            for gone in sorted(set(seen) - set(current)):
                events.append({"type": "DELETED", "object": seen.pop(gone)})  # the last state, as the API sends
            for event in events:
                data = json.dumps(event).encode() + b"\n"
                handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))  # one chunk per event
            handler.wfile.flush()
            time.sleep(0.02)
        handler.wfile.write(b"0\r\n\r\n")


def _matches(obj: dict[str, Any], selector: str) -> bool:
    labels = obj["metadata"].get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, _, value = term.partition("=")
        if key not in labels or ("=" in term and labels[key] != value):
            return False
    return True


def _status_body(code: int, message: str) -> dict[str, Any]:
    reasons = {404: "NotFound", 409: "Conflict", 422: "Invalid", 500: "InternalError"}
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure" if code >= 400 else "Success",
        "message": message,
        "reason": reasons.get(code, ""),
        "code": code,
    }
