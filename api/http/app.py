"""The HTTP surfaces: kube-scheduler's extender verbs routed to an ``Extender`` handed in, the probes, and (on a
port of their own) metrics and the debug listing.

Handlers only decode, call one method and encode. The verbs are served by a bare ASGI router (``api.http.verbs``) ahead
of FastAPI, which keeps the probes: filter sits on kube-scheduler's critical path. Bodies are decoded straight from
bytes with pydantic (no intermediate dict) and replies encoded the same way.

Three apps, so each can listen where it belongs (``api.http.server``): ``create_app`` (verbs and probes: the port
kube-scheduler calls, behind mTLS in a cluster), ``create_probe_app`` (the probes alone, for the kubelet, which
presents no client certificate) and ``create_debug_app`` (``/metrics`` and ``/debug/gangs``: what the extender
knows about every gang is for operators, not for whoever reaches the verb port).

Error policy (kube-scheduler treats any status but 200 as a failed call and ignores the body):
- a body that is not JSON, has the wrong shape or is too large → 400/413 naming the field, for the humans and
  logs that read it;
- anything the extender raises → logged, then a 200 carrying the verb's own ``Error`` so kube-scheduler shows the
  text and retries; never a 500;
- a client that goes away before its body arrived → one quiet log line, no traceback.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from pydantic import BaseModel
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.extender import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriorityList,
)
from api.http.body import DEFAULT_MAX_BODY_BYTES, BodyDecoder
from api.http.verbs import Verb, VerbRouter, internal_error
from api.http.whole_requests import WholeHandler, WholeRequests
from api.service import Extender

__all__ = ["DEFAULT_MAX_BODY_BYTES", "create_app", "create_debug_app", "create_probe_app"]

log = logging.getLogger(__name__)


class _NeverA500:
    """Last line of defence for failures outside a verb's own guard (routing, probes): log once, answer in the
    wire format's shape. Starlette's own handler for ``Exception`` re-raises after answering, which made the server
    log a second traceback for the same failure."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._whole = app if isinstance(app, WholeRequests) else None  # once: a Protocol's isinstance is slow

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking)
        except Exception as err:
            log.exception("unhandled error path=%s", scope.get("path", ""))
            if not started:
                reply = Response(internal_error(err), 503, media_type="application/json")
                await reply(scope, receive, send)

    def whole(self, method: str, path: str) -> WholeHandler | None:
        """``api.http.whole_requests.WholeRequests`` of the app within, which guards those itself."""
        return self._whole.whole(method, path) if self._whole is not None else None


def _bare_app() -> FastAPI:
    app = FastAPI(title="grove-extender", docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(_NeverA500)
    return app


def _add_probes(app: FastAPI, extender: Extender) -> None:
    @app.get("/healthz")
    async def healthz() -> Response:
        ok = extender.healthy()
        return JSONResponse({"healthy": ok}, status_code=200 if ok else 503)

    @app.get("/readyz")
    async def readyz() -> Response:
        ok = extender.ready()
        return JSONResponse({"ready": ok}, status_code=200 if ok else 503)


def create_probe_app(extender: Extender) -> FastAPI:
    """``/healthz`` and ``/readyz`` alone: what the kubelet's probes need, on a port without client certificates."""
    app = _bare_app()
    _add_probes(app, extender)
    return app


def create_debug_app(extender: Extender, *, registry: CollectorRegistry) -> FastAPI:
    """``/metrics`` (``registry``: the one ``create_app`` and the extender registered in) and ``/debug/gangs``."""
    app = _bare_app()

    @app.get("/metrics")
    async def metrics_endpoint() -> Response:
        return Response(content=generate_latest(registry), media_type=CONTENT_TYPE_LATEST)

    @app.get("/debug/gangs")
    async def debug_gangs() -> Response:
        gangs: Sequence[Any] = [dict(gang) for gang in extender.debug_gangs()]
        return JSONResponse({"gangs": gangs})

    return app


def create_app(
    extender: Extender,
    *,
    registry: CollectorRegistry | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
) -> ASGIApp:
    """The verbs and the probes. ``registry`` receives the app's own metrics; hand the same one to
    ``create_debug_app`` (a fresh one per app by default, never the process-global one)."""

    async def prioritize(args: ExtenderArgs) -> BaseModel:
        return HostPriorityList(list(await extender.prioritize(args)))

    verbs = (
        Verb("filter", ExtenderArgs, extender.filter, lambda message: ExtenderFilterResult(Error=message)),
        # prioritize has no error field: score nothing, which leaves kube-scheduler's own scores in charge.
        Verb("prioritize", ExtenderArgs, prioritize, lambda _: HostPriorityList([])),
        Verb("bind", ExtenderBindingArgs, extender.bind, lambda message: ExtenderBindingResult(Error=message)),
        # preempt proposes no node on failure: kube-scheduler then preempts nothing, which can never break a gang.
        Verb("preempt", ExtenderPreemptionArgs, extender.preempt, lambda _: ExtenderPreemptionResult()),
    )
    router = VerbRouter(
        {verb.name: verb for verb in verbs},
        fallback=create_probe_app(extender),
        registry=registry if registry is not None else CollectorRegistry(),
        bodies=BodyDecoder(max_bytes=max_body_bytes),
    )
    return _NeverA500(router)
