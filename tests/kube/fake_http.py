"""The HTTP side of the fake API server: routing, the wire format of lists, watches, errors and subresources.

Kept apart from the state (``fake_apiserver``) so each stays readable; the handler reaches into the server's state
under its lock, as the two are one component.
"""

from __future__ import annotations

import copy
import json
import re
import sys
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlparse

if TYPE_CHECKING:
    from tests.kube.fake_apiserver import FakeApiServer

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


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}  # fmt: skip


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _field(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part, {}) if isinstance(value, dict) else {}
    return value if isinstance(value, str) else ""


def matches(obj: dict[str, Any], selector: str | None) -> bool:
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


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up (tests do this on purpose) is not a server error.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


def handler_for(server: FakeApiServer) -> type[BaseHTTPRequestHandler]:
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
        self.api.wait_at_gates(method, parsed.path)
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
            items = [o for (o_ns, _), o in everything if (not ns or o_ns == ns) and matches(o, selector)]
            start = int(request.query.get("continue") or 0)
            limit = int(request.query.get("limit") or 0) or len(items)
            page = [copy.deepcopy(o) for o in items[start : start + limit]]
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
            updated = merge_patch(current, {"status": (request.body or {}).get("status")})
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
