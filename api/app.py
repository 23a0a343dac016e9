"""The HTTP surface: kube-scheduler's extender verbs routed to an ``Extender`` handed in, plus probes and metrics.

Handlers only decode, call one method and encode. Bodies are decoded straight from bytes with pydantic (no
intermediate dict) and replies encoded the same way, because filter sits on kube-scheduler's critical path.

Error policy (kube-scheduler treats any status but 200 as a failed call and ignores the body):
- a body that is not JSON, has the wrong shape or is too large → 400/413 naming the field, for the humans and
  logs that read it;
- anything the extender raises → logged, then a 200 carrying the verb's own ``Error`` so kube-scheduler shows the
  text and retries; never a 500.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from pydantic import BaseModel, ValidationError

from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriorityList,
)
from api.service import Extender

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app"]

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 32 * 1024 * 1024
"""Room for a NodeList of a few thousand real nodes (node-list mode); a node-names request is a few KB."""

_JSON = "application/json"
_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

ArgsT = TypeVar("ArgsT", bound=BaseModel)


@dataclass(frozen=True)
class _Verb:
    name: str
    model: type[BaseModel]
    call: Callable[[Any], Awaitable[BaseModel]]
    on_failure: Callable[[str], BaseModel]


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _describe_validation(error: ValidationError) -> str:
    parts = []
    for detail in error.errors()[:3]:
        where = ".".join(str(part) for part in detail["loc"]) or "body"
        parts.append(f"{where}: {detail['msg']}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _BadRequest(413, f"body of {declared} bytes exceeds the limit of {limit} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _BadRequest(413, f"body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _decode(model: type[ArgsT], body: bytes, verb: str) -> ArgsT:
    if not body:
        raise _BadRequest(400, f"{verb}: empty body; expected a JSON object")
    try:
        return model.model_validate_json(body)
    except ValidationError as err:
        raise _BadRequest(400, f"{verb}: {_describe_validation(err)}") from None


def _json(model: BaseModel) -> Response:
    return Response(content=model.model_dump_json(), media_type=_JSON)


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
            "Extender calls answered with a 4xx (malformed) or with Error after an unexpected failure.",
            ["verb", "cause"],
            registry=registry,
        )


def create_app(
    extender: Extender,
    *,
    registry: CollectorRegistry | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> FastAPI:
    """Build the app. ``registry`` receives the app's own metrics and is what ``/metrics`` serves; pass the one
    the extender registered its metrics in (a fresh one per app by default, never the process-global one)."""
    registry = registry if registry is not None else CollectorRegistry()
    metrics = _Metrics(registry)
    app = FastAPI(title="grove-extender", docs_url=None, redoc_url=None, openapi_url=None)

    def endpoint(verb: _Verb) -> Callable[[Request], Awaitable[Response]]:
        latency = metrics.latency.labels(verb.name)
        rejected = metrics.rejected.labels(verb.name, "bad_request")
        failed = metrics.rejected.labels(verb.name, "internal")

        async def serve(request: Request) -> Response:
            started = time.perf_counter()
            try:
                args = _decode(verb.model, await _read_body(request, max_body_bytes), verb.name)
            except _BadRequest as bad:
                rejected.inc()
                log.info("rejected request verb=%s status=%d reason=%s", verb.name, bad.status, bad.message)
                return JSONResponse({"Error": bad.message}, status_code=bad.status)
            try:
                reply = await verb.call(args)
            except Exception as err:
                # Anything unexpected still gets a well-formed reply kube-scheduler understands (and retries on).
                log.exception("extender failed verb=%s", verb.name)
                failed.inc()
                reply = verb.on_failure(f"grove-extender {verb.name}: internal error: {type(err).__name__}: {err}")
            latency.observe(time.perf_counter() - started)
            return _json(reply)

        return serve

    async def prioritize(args: ExtenderArgs) -> BaseModel:
        return HostPriorityList(list(await extender.prioritize(args)))

    verbs = (
        _Verb("filter", ExtenderArgs, extender.filter, lambda message: ExtenderFilterResult(Error=message)),
        # prioritize has no error field: score nothing, which leaves kube-scheduler's own scores in charge.
        _Verb("prioritize", ExtenderArgs, prioritize, lambda _: HostPriorityList([])),
        _Verb("bind", ExtenderBindingArgs, extender.bind, lambda message: ExtenderBindingResult(Error=message)),
        # preempt proposes no node on failure: kube-scheduler then preempts nothing, which can never break a gang.
        _Verb("preempt", ExtenderPreemptionArgs, extender.preempt, lambda _: ExtenderPreemptionResult()),
    )
    for verb in verbs:
        # Plain routes, not FastAPI operations: the body is decoded here, so FastAPI's dependency and validation
        # machinery would only add time to kube-scheduler's critical path.
        app.add_route(f"/{verb.name}", endpoint(verb), methods=["POST"])

    @app.get("/healthz")
    async def healthz() -> Response:
        ok = extender.healthy()
        return JSONResponse({"healthy": ok}, status_code=200 if ok else 503)

    @app.get("/readyz")
    async def readyz() -> Response:
        ok = extender.ready()
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(content=generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/debug/gangs")
    async def debug_gangs() -> Response:
        gangs: Sequence[Any] = [dict(gang) for gang in extender.debug_gangs()]
        return JSONResponse({"gangs": gangs})

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception) -> Response:
        # Last line of defence for failures outside a verb's own guard (routing, probes): log, answer in the
        # wire format's shape, never an HTML 500 page.
        log.exception("unhandled error path=%s", request.url.path)
        return JSONResponse({"Error": f"grove-extender: internal error: {type(err).__name__}"}, status_code=503)

    return app
