"""A small Kubernetes API server for tests: real HTTP on 127.0.0.1, just the endpoints grove-extender uses.

It keeps objects per resource with a global resourceVersion, an event log for watches (chunked
newline-delimited JSON, bookmarks on request, 410 Gone for a resourceVersion older than the last ``compact()``),
paginated lists, the ``pods/binding`` and ``/status`` subresources, optimistic concurrency on PUT, and injected
faults (``fail``) and delays (``delay``). Every request is recorded so tests can check the shapes the real client
sends. Not implemented, on purpose: auth, label selectors, server-side apply, strategic merge patch.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import yaml
from kubernetes.client import ApiClient

from scheduler.kube.connect import load_api_client

CORE = "v1"
# resource path key ("<apiVersion>/<plural>") → (kind, namespaced)
KINDS: dict[str, tuple[str, bool]] = {
    "v1/nodes": ("Node", False),
    "v1/pods": ("Pod", True),
    "v1/secrets": ("Secret", True),
    "v1/events": ("Event", True),
    "scheduler.grove.io/v1alpha1/podgangs": ("PodGang", True),
    "grove.io/v1alpha1/podcliquesets": ("PodCliqueSet", True),
    "grove.io/v1alpha1/clustertopologybindings": ("ClusterTopologyBinding", False),
    "coordination.k8s.io/v1/leases": ("Lease", True),
    "events.k8s.io/v1/events": ("Event", True),
}
NODES = "v1/nodes"
PODS = "v1/pods"
PODGANGS = "scheduler.grove.io/v1alpha1/podgangs"
LEASES = "coordination.k8s.io/v1/leases"
EVENTS = "events.k8s.io/v1/events"

_CORE_PATH = re.compile(
    r"^/api/v1/(?:namespaces/(?P<ns>[^/]+)/)?(?P<plural>[a-z]+)(?:/(?P<name>[^/]+))?(?:/(?P<sub>[a-z]+))?$"
)
_GROUP_PATH = re.compile(
    r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/(?:namespaces/(?P<ns>[^/]+)/)?(?P<plural>[a-z]+)"
    r"(?:/(?P<name>[^/]+))?(?:/(?P<sub>[a-z]+))?$"
)


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any


@dataclass
class _Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    reason: str
    message: str
    times: int


@dataclass
class _Entry:
    """One line of the watch log: an object change, a bookmark, or an error for open watches."""

    rv: int
    resource: str
    type: str
    obj: dict[str, Any]


@dataclass
class _State:
    objects: dict[str, dict[tuple[str, str], dict[str, Any]]] = field(default_factory=dict)
    log: list[_Entry] = field(default_factory=list)
    rv: int = 100
    compacted: int = 0


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip


def _merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result


def _field(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part, {}) if isinstance(value, dict) else {}
    return value if isinstance(value, str) else ""


def _matches(obj: dict[str, Any], selector: str | None) -> bool:
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            path, value = term.split("!=", 1)
            if _field(obj, path) == value:
                return False
        else:
            path, value = term.replace("==", "=").split("=", 1)
            if _field(obj, path) != value:
                return False
    return True


class FakeApiServer:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._state = _State()
        self._faults: list[_Fault] = []
        self._delays: list[tuple[str, re.Pattern[str], float]] = []
        self._closing = False
        self.requests: list[Request] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=functools.partial(self._server.serve_forever, poll_interval=0.05), name="fake-apiserver", daemon=True
        )

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> FakeApiServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def write_kubeconfig(self, path: Path) -> Path:
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": "test-token"}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}],
            "current-context": "fake",
        }
        path.write_text(yaml.safe_dump(document))
        return path

    # --- data ------------------------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._state.rv

    def put(self, resource: str, obj: dict[str, Any], *, silent: bool = False) -> dict[str, Any]:
        """Create or replace an object (no version check), emitting ADDED or MODIFIED — or, with ``silent``, a
        change no watcher will ever be told about (as if its event was compacted away before delivery)."""
        with self._cond:
            return self._store(resource, copy.deepcopy(obj), silent=silent)

    def get(self, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        with self._cond:
            found = self._state.objects.get(resource, {}).get((namespace, name))
            return copy.deepcopy(found) if found else None

    def objects(self, resource: str) -> list[dict[str, Any]]:
        with self._cond:
            return [copy.deepcopy(o) for o in self._state.objects.get(resource, {}).values()]

    def delete(self, resource: str, name: str, namespace: str = "", *, silent: bool = False) -> None:
        with self._cond:
            self._remove(resource, namespace, name, silent=silent)

    def compact(self) -> None:
        """Forget history: watches from any resourceVersion up to now get 410 Gone."""
        with self._cond:
            self._state.compacted = self._state.rv
            self._state.log = []  # open watches notice the new list and end once they drained the old one

    def expire_watches(self, resource: str) -> None:
        """Send 410 Gone to open watches of ``resource`` and compact, as etcd compaction does."""
        with self._cond:
            self._append(resource, "ERROR", status_body(410, "Expired", "too old resource version"))
            self.compact()

    def bookmark(self, resource: str) -> None:
        with self._cond:
            kind, _ = KINDS[resource]
            meta = {"resourceVersion": str(self._state.rv)}
            self._append(
                resource, "BOOKMARK", {"kind": kind, "apiVersion": resource.rsplit("/", 1)[0], "metadata": meta}
            )

    def fail(self, method: str, path: str, status: int, *, reason: str = "", message: str = "", times: int = 1) -> None:
        """Answer the next ``times`` requests whose path matches the regex ``path`` with an error Status."""
        with self._cond:
            self._faults.append(_Fault(method, re.compile(path), status, reason, message or reason, times))

    def delay(self, method: str, path: str, seconds: float) -> None:
        with self._cond:
            self._delays.append((method, re.compile(path), seconds))

    def requests_to(self, method: str, path: str) -> list[Request]:
        pattern = re.compile(path)
        with self._cond:
            return [r for r in self.requests if r.method == method and pattern.search(r.path)]

    # --- internals (hold self._cond) ---------------------------------------------------------------------------

    def _store(self, resource: str, obj: dict[str, Any], *, silent: bool = False) -> dict[str, Any]:
        meta = obj.setdefault("metadata", {})
        key = (meta.get("namespace", ""), meta["name"])
        bucket = self._state.objects.setdefault(resource, {})
        existed = key in bucket
        self._state.rv += 1
        meta["resourceVersion"] = str(self._state.rv)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
        kind, _ = KINDS[resource]
        obj.setdefault("kind", kind)
        obj.setdefault("apiVersion", resource.rsplit("/", 1)[0])
        bucket[key] = obj
        if not silent:
            self._append(resource, "MODIFIED" if existed else "ADDED", obj)
        return copy.deepcopy(obj)

    def _remove(self, resource: str, namespace: str, name: str, *, silent: bool = False) -> dict[str, Any] | None:
        obj = self._state.objects.get(resource, {}).pop((namespace, name), None)
        if obj is not None:
            self._state.rv += 1
            obj["metadata"]["resourceVersion"] = str(self._state.rv)
            if not silent:
                self._append(resource, "DELETED", obj)
        return obj

    def _append(self, resource: str, event_type: str, obj: dict[str, Any]) -> None:
        self._state.log.append(_Entry(self._state.rv, resource, event_type, copy.deepcopy(obj)))
        self._cond.notify_all()

    def _take_fault(self, method: str, path: str) -> _Fault | None:
        for fault in self._faults:
            if fault.method == method and fault.pattern.search(path) and fault.times > 0:
                fault.times -= 1
                return fault
        return None

    def _delay_for(self, method: str, path: str) -> float:
        return sum(s for m, p, s in self._delays if m == method and p.search(path))

    # --- watch -------------------------------------------------------------------------------------------------

    def watch_lines(
        self, *, resource: str, since: int, selector: str | None, bookmarks: bool, timeout: float
    ) -> Iterator[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        with self._cond:
            expired = since < self._state.compacted
            log = self._state.log
            position = next((i for i, e in enumerate(log) if e.rv > since), len(log))
        if expired:
            yield {"type": "ERROR", "object": status_body(410, "Expired", "too old resource version")}
            return
        while True:
            with self._cond:
                pending = log[position:]
                position = len(log)
                if not pending:
                    if log is not self._state.log or self._closing:
                        return
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return
                    self._cond.wait(min(remaining, 0.2))
                    continue
            for entry in pending:
                if entry.resource != resource:
                    continue
                if entry.type == "ERROR":
                    yield {"type": "ERROR", "object": entry.obj}
                    return
                if entry.type == "BOOKMARK":
                    if bookmarks:
                        yield {"type": "BOOKMARK", "object": entry.obj}
                    continue
                event_type = entry.type if _matches(entry.obj, selector) else "DELETED"
                yield {"type": event_type, "object": entry.obj}


def _handler_for(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        api = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    api: FakeApiServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    # --- plumbing --------------------------------------------------------------------------------------------

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, reason: str, message: str) -> None:
        self._send(code, status_body(code, reason, message))

    def _dispatch(self, method: str) -> None:
        parsed = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        request = Request(method, parsed.path, query, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.api._cond:
            self.api.requests.append(request)
            fault = self.api._take_fault(method, parsed.path)
            pause = self.api._delay_for(method, parsed.path)
        if pause:
            time.sleep(pause)
        if fault is not None:
            self._error(fault.status, fault.reason, fault.message)
            return
        match = _CORE_PATH.match(parsed.path) or _GROUP_PATH.match(parsed.path)
        if match is None:
            self._error(404, "NotFound", f"the server could not find the requested resource {parsed.path}")
            return
        parts = match.groupdict()
        api_version = f"{parts['group']}/{parts['version']}" if parts.get("group") else CORE
        resource = f"{api_version}/{parts['plural']}"
        if resource not in KINDS:
            self._error(404, "NotFound", f"the server could not find the requested resource {parsed.path}")
            return
        ns, name, sub = parts.get("ns") or "", parts.get("name"), parts.get("sub")
        if name is None:
            self._collection(method, resource, ns, request)
            return
        with self.api._cond:  # held while answering, so the object cannot change under a check-then-write
            current = self.api._state.objects.get(resource, {}).get((ns, name))
            if current is None:
                self._error(404, "NotFound", f'{KINDS[resource][0].lower()}s "{name}" not found')
            elif sub is None:
                self._item(method, resource, current, request)
            else:
                self._subresource(method, resource, current, sub, request)

    def _collection(self, method: str, resource: str, ns: str, request: Request) -> None:
        if method == "GET" and request.query.get("watch") in ("true", "1", "True"):
            self._watch(resource, request)
        elif method == "GET":
            self._list(resource, ns, request)
        elif method == "POST":
            self._create(resource, ns, request.body)
        else:
            self._error(405, "MethodNotAllowed", f"{method} not allowed on a collection")

    def _list(self, resource: str, ns: str, request: Request) -> None:
        selector = request.query.get("fieldSelector")
        with self.api._cond:
            version = self.api._state.rv
            everything = sorted(self.api._state.objects.get(resource, {}).items())
        items = [copy.deepcopy(o) for (o_ns, _), o in everything if (not ns or o_ns == ns) and _matches(o, selector)]
        start = int(request.query.get("continue") or 0)
        limit = int(request.query.get("limit") or 0) or len(items)
        page = items[start : start + limit]
        meta: dict[str, Any] = {"resourceVersion": str(version)}
        if start + limit < len(items):
            meta["continue"] = str(start + limit)
        if resource.startswith("v1/"):  # core lists carry no kind/apiVersion per item; CRD lists do
            for item in page:
                item.pop("kind", None)
                item.pop("apiVersion", None)
        kind, _ = KINDS[resource]
        self._send(
            200, {"kind": f"{kind}List", "apiVersion": resource.rsplit("/", 1)[0], "metadata": meta, "items": page}
        )

    def _watch(self, resource: str, request: Request) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        lines = self.api.watch_lines(
            resource=resource,
            since=int(request.query.get("resourceVersion") or 0),
            selector=request.query.get("fieldSelector"),
            bookmarks=request.query.get("allowWatchBookmarks") in ("true", "True", "1"),
            timeout=float(request.query.get("timeoutSeconds") or 30),
        )
        try:
            for event in lines:
                data = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _create(self, resource: str, ns: str, body: Any) -> None:
        if not isinstance(body, dict) or not (body.get("metadata") or {}).get("name"):
            self._error(422, "Invalid", "metadata.name: Required value")
            return
        body["metadata"]["namespace"] = ns if KINDS[resource][1] else ""
        with self.api._cond:
            if (ns, body["metadata"]["name"]) in self.api._state.objects.get(resource, {}):
                self._error(409, "AlreadyExists", f'{KINDS[resource][0]} "{body["metadata"]["name"]}" already exists')
                return
            created = self.api._store(resource, body)
        self._send(201, created)

    def _item(self, method: str, resource: str, current: dict[str, Any], request: Request) -> None:
        kind, _ = KINDS[resource]
        ns, name = current["metadata"].get("namespace", ""), current["metadata"]["name"]
        if method == "GET":
            self._send(200, copy.deepcopy(current))
        elif method == "PUT":
            sent = (request.body.get("metadata") or {}).get("resourceVersion")
            if sent != current["metadata"]["resourceVersion"]:
                message = f'Operation cannot be fulfilled on {kind.lower()}s "{name}": the object has been modified'
                self._error(409, "Conflict", message)
                return
            request.body["metadata"]["namespace"] = ns
            self._send(200, self.api._store(resource, request.body))
        elif method == "DELETE":
            self.api._remove(resource, ns, name)
            self._send(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
        else:
            self._error(405, "MethodNotAllowed", f"{method} {kind} is not supported by the fake")

    def _subresource(self, method: str, resource: str, current: dict[str, Any], sub: str, request: Request) -> None:
        if resource == PODS and sub == "binding" and method == "POST":
            self._bind(current, request.body)
        elif sub == "status" and method == "PATCH":
            if request.headers.get("content-type") != "application/merge-patch+json":
                self._error(415, "UnsupportedMediaType", f"content type {request.headers.get('content-type')}")
                return
            updated = _merge_patch(current, {"status": (request.body or {}).get("status")})
            self._send(200, self.api._store(resource, updated))
        else:
            self._error(405, "MethodNotAllowed", f"{method} {KINDS[resource][0]}/{sub} is not supported by the fake")

    def _bind(self, pod: dict[str, Any], body: Any) -> None:
        name = pod["metadata"]["name"]
        target = (body or {}).get("target") or {}
        if body.get("kind") != "Binding" or target.get("kind") != "Node" or not target.get("name"):
            self._error(400, "BadRequest", "a Binding with target.kind Node and target.name is required")
            return
        uid = (body.get("metadata") or {}).get("uid")
        if uid and uid != pod["metadata"]["uid"]:
            self._error(409, "Conflict", f"Precondition failed: UID in precondition: {uid}, UID in object meta: ")
            return
        if pod.get("spec", {}).get("nodeName"):
            message = f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"'  # noqa: E501
            self._error(409, "Conflict", message)
            return
        updated = copy.deepcopy(pod)
        updated.setdefault("spec", {})["nodeName"] = target["name"]
        self.api._store(PODS, updated)
        self._send(201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})


@contextmanager
def connected(server: FakeApiServer, directory: Path) -> Iterator[ApiClient]:
    """The real client, configured the way users do it: a kubeconfig file (here pointing at the fake)."""
    client = load_api_client(str(server.write_kubeconfig(directory / "kubeconfig")))
    try:
        yield client
    finally:
        client.close()


@contextmanager
def running() -> Iterator[FakeApiServer]:
    server = FakeApiServer().start()
    try:
        yield server
    finally:
        server.stop()
