"""kube-scheduler's four verbs as a bare ASGI app, ahead of everything else.

kube-scheduler calls ``filter`` on its critical path, one pod at a time, then ``bind`` for the same pod: whatever
the HTTP stack spends per call is spent per pod. Routed through FastAPI, each call also went through its middleware
stack (error, exception, telemetry, body-limit and exit-stack layers), the router's matching and Starlette's
``Request``/``Response`` objects, none of which a verb needs, on both of a pod's calls
(``python -m benchmarks.bench_http`` measures a filter and a bind both ways; figures in docs/bench_http.md). Here a
verb is a dictionary lookup on the path, the body is read straight from ``receive`` and the reply written straight to
``send``; anything that is not a verb goes to the app handed in (FastAPI: the probes).

A handler decodes, calls one method of the extender and encodes, under the error policy of ``api.http.app``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

from api.http.body import BadRequest, BodyDecoder, ClientGone
from api.http.whole_requests import Reply, WholeHandler

__all__ = ["Verb", "VerbRouter", "internal_error"]

log = logging.getLogger(__name__)

_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_JSON_HEADERS = [(b"content-type", b"application/json")]


@dataclass(frozen=True)
class Verb:
    """One verb: the body's model, the extender method it calls, and its reply when that method fails."""

    name: str
    model: type[BaseModel]
    call: Callable[[Any], Awaitable[BaseModel]]
    on_failure: Callable[[str], BaseModel]


class _Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.latency = Histogram(
            "grove_extender_request_seconds",
            "Time to answer one extender call, by verb (bind includes the wait at the gang barrier).",
            ["verb"],
            buckets=_LATENCY_BUCKETS,
            registry=registry,
        )
        self.rejected = Counter(
            "grove_extender_requests_rejected_total",
            "Extender calls answered with a 4xx (malformed), with Error after an unexpected failure, or never "
            "answered because the client went away.",
            ["verb", "cause"],
            registry=registry,
        )


def _reply(status: int, body: bytes, *, headers: list[tuple[bytes, bytes]]) -> Reply:
    return status, [*headers, (b"content-length", b"%d" % len(body))], body


async def _respond(send: Send, reply: Reply) -> None:
    status, headers, body = reply
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _encode(model: BaseModel) -> bytes:
    return model.__pydantic_serializer__.to_json(model)


class _Endpoint:
    """One verb's handler, with its metric children resolved once (labels() is a locked dictionary lookup)."""

    def __init__(self, verb: Verb, *, bodies: BodyDecoder, metrics: _Metrics) -> None:
        self._verb = verb
        self._bodies = bodies
        self._latency = metrics.latency.labels(verb.name)
        self._bad_request = metrics.rejected.labels(verb.name, "bad_request")
        self._failed = metrics.rejected.labels(verb.name, "internal")
        self._gone = metrics.rejected.labels(verb.name, "client_gone")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        try:
            body = await self._bodies.read(scope, receive)
        except BadRequest as bad:
            reply = self._refused(bad)
        except ClientGone:
            # Nobody is left to answer: an aborted upload is the client's business, not an error of ours.
            self._gone.inc()
            log.info("client went away before its body arrived verb=%s", self._verb.name)
            reply = _reply(400, b"", headers=[])
        else:
            reply = await self._answer(body, started)
        await _respond(send, reply)

    async def whole(self, body: bytes, headers: list[tuple[bytes, bytes]]) -> Reply:
        """The same for a request whose body arrived whole (``api.http.http2``), with ``api.http.app``'s last line of
        defence: no ASGI middleware stands around this one."""
        started = time.perf_counter()
        try:
            self._bodies.check_declared(headers)
            self._bodies.check_size(len(body))
        except BadRequest as bad:
            return self._refused(bad)
        try:
            return await self._answer(body, started)
        except Exception as err:
            log.exception("unhandled error path=/%s", self._verb.name)
            return _reply(503, internal_error(err), headers=_JSON_HEADERS)

    def _refused(self, bad: BadRequest) -> Reply:
        self._bad_request.inc()
        log.info("rejected request verb=%s status=%d reason=%s", self._verb.name, bad.status, bad.message)
        return _reply(bad.status, _error_body(bad.message), headers=_JSON_HEADERS)

    async def _answer(self, body: bytes, started: float) -> Reply:
        verb = self._verb
        try:
            args = await self._bodies.decode(verb.model, body, verb.name)
        except BadRequest as bad:
            return self._refused(bad)
        try:
            reply = await verb.call(args)
        except Exception as err:
            # Anything unexpected still gets a well-formed reply kube-scheduler understands (and retries on).
            log.exception("extender failed verb=%s", verb.name)
            self._failed.inc()
            reply = verb.on_failure(f"grove-extender {verb.name}: internal error: {type(err).__name__}: {err}")
        self._latency.observe(time.perf_counter() - started)
        return _reply(200, _encode(reply), headers=_JSON_HEADERS)


class _Error(BaseModel):
    Error: str


def _error_body(message: str) -> bytes:
    return _encode(_Error(Error=message))


def internal_error(err: Exception) -> bytes:
    """The body of a 503 for a failure outside a verb's own guard: the wire format's shape, the error's type."""
    return _error_body(f"grove-extender: internal error: {type(err).__name__}")


class VerbRouter:
    """ASGI: ``POST /<verb>`` to its handler, any other method on a verb's path 405, everything else to
    ``fallback``."""

    def __init__(
        self,
        verbs: Mapping[str, Verb],
        *,
        fallback: ASGIApp,
        registry: CollectorRegistry,
        bodies: BodyDecoder,
    ) -> None:
        metrics = _Metrics(registry)
        self._endpoints = {f"/{name}": _Endpoint(verb, bodies=bodies, metrics=metrics) for name, verb in verbs.items()}
        self._fallback = fallback

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._endpoints.get(scope["path"]) if scope["type"] == "http" else None
        if endpoint is None:
            await self._fallback(scope, receive, send)
        elif scope["method"] != "POST":
            message = _error_body(f"{scope['method']} {scope['path']}: extender verbs are POST only")
            await _respond(send, _reply(405, message, headers=[*_JSON_HEADERS, (b"allow", b"POST")]))
        else:
            await endpoint(scope, receive, send)

    def whole(self, method: str, path: str) -> WholeHandler | None:
        """``api.http.whole_requests.WholeRequests``: a verb's handler for its ``POST``; anything else goes through
        ASGI."""
        endpoint = self._endpoints.get(path) if method == "POST" else None
        return endpoint.whole if endpoint is not None else None
