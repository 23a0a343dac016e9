"""The HTTP side of the fake API server: routing requests to the store and the wire format of lists and watches.

kube-apiserver's shapes: ``<Kind>List`` with ``metadata.resourceVersion`` and ``continue``; core list items without
``kind``/``apiVersion`` (CRD items keep them); chunked newline-delimited watch events; errors as ``v1.Status``.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import struct
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlparse

from scheduler.kube.memory.resources import PODS, RESOURCES, Resource, StatusError, Target, parse_path
from scheduler.kube.memory.store import Store

__all__ = ["Dropped", "QuietServer", "Request", "Served", "handler_for"]

_MERGE_PATCH = "application/merge-patch+json"
_TRUE = ("true", "True", "1")
_CHANGES = ("ADDED", "MODIFIED", "DELETED")


@dataclass
class Request:
    """One request as the server received it, kept for assertions on verbs, paths, queries, headers and bodies."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # names lower-cased: HTTP header names are case-blind
    body: Any


class Dropped(Exception):
    """The request is answered by resetting its connection (``FakeApiServer.drop``)."""


class Throttled(Exception):
    """The request is turned away as kube-apiserver's priority and fairness does when the client's priority level
    is full (``FakeApiServer.throttle``): 429, a plain-text sentence and a ``Retry-After`` in seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(retry_after)
        self.retry_after = retry_after


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 drops the SYNs of a burst of new connections (concurrent binds), and the
    # client's retry waits a second or more: a stall kube-apiserver, listening with the kernel's limit, never has.
    request_queue_size = 128

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out and hung up (tests do this on purpose) is not a server error.
        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class Served(Protocol):
    """What the handler answers from: the store, and the server's steering around each request (``server``)."""

    store: Store

    def before(self, request: Request) -> list[threading.Barrier]:
        """Log the request, apply its delay and fault; the gates it must pass once its answer is ready."""
        ...

    def pass_gates(self, gates: list[threading.Barrier]) -> None: ...


def handler_for(server: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        api = server

    return Handler


class _Handler(BaseHTTPRequestHandler):
    api: Served
    protocol_version = "HTTP/1.1"  # keep-alive and chunked watches, as kube-apiserver speaks
    # Headers and body go out in two writes: with Nagle's algorithm the second waits for the client's delayed ACK
    # (40 ms a request on Linux). Go's net/http, hence kube-apiserver, sets TCP_NODELAY too.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def _handle(self) -> None:
        request = self._read()
        try:
            gates = self.api.before(request)
            target = parse_path(request.path)
            if request.method == "GET" and target.name is None and request.query.get("watch") in _TRUE:
                self._watch(target, request)
                return
            code, body = self._collection(target, request) if target.name is None else self._object(target, request)
        except StatusError as err:
            code, body = err.code, err.body()
            gates = []
        except Throttled as err:
            data = b"Too many requests, please try again later.\n"
            self.send_response(429)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Retry-After", str(err.retry_after))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        except Dropped:
            # SO_LINGER 0: closing sends a TCP reset, as a crashed server or a load balancer cutting in does.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            return
        # Gated requests have all read (or written) before any is answered: two clients surely saw the same state.
        self.api.pass_gates(gates)
        self._send(code, body)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

    def _read(self) -> Request:
        parsed = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        return Request(self.command, parsed.path, query, headers, json.loads(raw) if raw else None)

    def _send(self, code: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _collection(self, target: Target, request: Request) -> tuple[int, Any]:
        if request.method == "GET":
            return 200, self._list(target, request)
        if request.method == "POST":
            return 201, self.api.store.create(target.resource, target.namespace, request.body)
        raise StatusError(405, "MethodNotAllowed", f"{request.method} not allowed on a collection")

    def _object(self, target: Target, request: Request) -> tuple[int, Any]:
        store, method, sub = self.api.store, request.method, target.subresource
        assert target.name is not None
        with store.cond:  # held while answering, so the object cannot change under a check-then-write
            current = store.find(target.resource, target.namespace, target.name)
            if method == "GET" and sub in (None, "status"):
                return 200, copy.deepcopy(current)
            if sub == "scale" and method in ("GET", "PUT", "PATCH"):
                if method == "PATCH" and request.headers.get("content-type") != _MERGE_PATCH:
                    message = f"the fake serves merge patches only, not {request.headers.get('content-type')}"
                    raise StatusError(415, "UnsupportedMediaType", message)
                return 200, store.scale(target.resource, current, request.body if method != "GET" else None, method)
            if method == "PUT" and sub is None:
                return 200, store.replace(target.resource, current, request.body)
            if method == "PATCH" and sub in (None, "status"):
                if request.headers.get("content-type") != _MERGE_PATCH:
                    message = f"the fake serves merge patches only, not {request.headers.get('content-type')}"
                    raise StatusError(415, "UnsupportedMediaType", message)
                return 200, store.patch(target.resource, current, request.body, subresource=sub)
            if method == "DELETE" and sub is None:
                options = request.body if isinstance(request.body, dict) else {}
                propagation = options.get("propagationPolicy") or request.query.get("propagationPolicy")
                store.delete(target.resource, current, propagation=propagation)
                return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
            if method == "POST" and target.resource == PODS and sub == "binding":
                store.bind(current, request.body)
                return 201, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
        kind = RESOURCES[target.resource].kind
        where = f"{kind}/{sub}" if sub else kind
        raise StatusError(405, "MethodNotAllowed", f"{method} {where} is not supported by the fake")

    def _list(self, target: Target, request: Request) -> dict[str, Any]:
        token = request.query.get("continue")
        page, version, last = self.api.store.page(
            target.resource,
            target.namespace,
            fields=request.query.get("fieldSelector"),
            labels=request.query.get("labelSelector"),
            after=_continue_key(token) if token else None,
            limit=int(request.query.get("limit") or 0),
        )
        meta: dict[str, Any] = {"resourceVersion": str(version)}
        if last is not None:
            meta["continue"] = _continue_token(last)
        if target.resource.startswith("v1/"):  # core lists carry no kind/apiVersion per item; CRD lists do
            for item in page:
                item.pop("kind", None)
                item.pop("apiVersion", None)
        kind, api_version = RESOURCES[target.resource].kind, Resource.api_version(target.resource)
        return {"kind": f"{kind}List", "apiVersion": api_version, "metadata": meta, "items": page}

    def _watch(self, target: Target, request: Request) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        events = self.api.store.watch(
            resource=target.resource,
            since=int(request.query.get("resourceVersion") or 0),
            fields=request.query.get("fieldSelector"),
            labels=request.query.get("labelSelector"),
            bookmarks=request.query.get("allowWatchBookmarks") in _TRUE,
            timeout=float(request.query.get("timeoutSeconds") or 30),
        )
        try:
            for event in events:
                if (
                    target.namespace
                    and event["type"] in _CHANGES
                    and event["object"]["metadata"].get("namespace") != target.namespace
                ):
                    continue
                data = json.dumps(event).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")  # one chunk per event
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client hung up: done
        # A watch that ends (its timeout, compaction) leaves the connection open for the next request, as
        # kube-apiserver's does: closing it unannounced made the client's pool reuse a dead connection, and urllib3
        # log "Retrying ... RemoteDisconnected" at WARNING after every watch.


def _continue_token(key: tuple[str, str]) -> str:
    """Opaque to clients, as kube-apiserver's (which encodes the last key it returned)."""
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode()


def _continue_key(token: str) -> tuple[str, str]:
    try:
        namespace, name = json.loads(base64.urlsafe_b64decode(token.encode()))
    except (ValueError, TypeError):
        raise StatusError(400, "BadRequest", f"invalid continue token {token!r}") from None
    return str(namespace), str(name)
