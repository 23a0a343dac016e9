"""Serving the apps: one process, one event loop, one uvicorn server per listener (verbs, probes, debug).

Each listener has its own address, port and, optionally, TLS (``api.http.tls``: a certificate and key, and a client
CA whose certificates, carrying an accepted name, are required). A TLS listener speaks HTTP/2 (``api.http.http2``) to
a client that offers it by ALPN, as kube-scheduler's does, and HTTP/1.1 to any other. Every port is bound before any
is served, so a port in use or an unreadable certificate is one clear error at start-up, not a half-started process.

Slow clients are bounded: a TLS handshake must finish within its own deadline (``api.http.tls``), a request's headers
and body must arrive whole within ``request_timeout`` of its first byte (of the connection, for the first request),
its headers may not exceed ``MAX_HEADER_BYTES`` nor ``MAX_HEADER_FIELDS`` fields (``api.http.limits``), and an idle
keep-alive connection is closed after ``keep_alive``. uvicorn bounds only the last of these by itself: half-sent
headers or bodies would otherwise hold a connection open forever. The HTTP/1.1 bounds are a subclass of uvicorn's
own protocol, and every other reach into uvicorn's internals is in ``api.http.fences.uvicorn_fence``.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType

import uvicorn
from prometheus_client import CollectorRegistry
from starlette.types import ASGIApp

from api.http.fences.uvicorn_fence import (
    QuietServer,
    ask_to_stop,
    deadline_protocol,
    gated,
    loop_factory,
    served_by,
)
from api.http.http2 import Http2Protocol
from api.http.limits import MAX_HEADER_BYTES, MAX_HEADER_FIELDS
from api.http.tls import HandshakeGate, TlsConfig, TlsError, TlsReloader, server_context

__all__ = ["MAX_HEADER_BYTES", "Listener", "ServeError", "Timeouts", "serve_listeners"]

log = logging.getLogger(__name__)


class ServeError(RuntimeError):
    """A listener cannot start (port in use, certificate unreadable); the message names the listener and why."""


@dataclass(frozen=True)
class Listener:
    name: str  # for logs and errors: "extender", "probes", "debug"
    app: ASGIApp
    host: str
    port: int
    tls: TlsConfig | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"


@dataclass(frozen=True)
class Timeouts:
    keep_alive: float = 120.0  # well above kube-scheduler's idle reuse: a fresh TLS connection costs more than filter
    request: float = 10.0  # headers and body, from the first byte; kube-scheduler itself gives up after 5 s
    graceful_shutdown: float = 10.0


def _http2(timeouts: Timeouts) -> Callable[[asyncio.Protocol], asyncio.Protocol]:
    """HTTP/2 (``api.http.http2``) for a connection whose client chose it, with the app and server state of the
    HTTP/1.1 protocol uvicorn made for it, and the same bounds."""

    def make(http: asyncio.Protocol) -> asyncio.Protocol:
        app, server_state = served_by(http)
        return Http2Protocol(
            app=app,
            server_state=server_state,
            request_timeout=timeouts.request,
            keep_alive=timeouts.keep_alive,
            max_header_bytes=MAX_HEADER_BYTES,
        )

    return make


def _config(
    listener: Listener, *, log_level: str, timeouts: Timeouts, registry: CollectorRegistry
) -> tuple[uvicorn.Config, HandshakeGate | None]:
    http = deadline_protocol(
        request_timeout=timeouts.request, max_header_bytes=MAX_HEADER_BYTES, max_header_fields=MAX_HEADER_FIELDS
    )
    gate = None
    if listener.tls is not None:
        try:
            context = server_context(listener.tls)
        except TlsError as err:
            raise ServeError(f"{listener.name} listener: cannot load its TLS files: {err}") from None
        gate = HandshakeGate(
            listener=listener.name,
            config=listener.tls,
            context=context,
            registry=registry,
            alternatives={"h2": _http2(timeouts)},
        )
    config = uvicorn.Config(
        listener.app,
        host=listener.host,
        port=listener.port,
        log_level=log_level,
        log_config=None,  # uvicorn's few lines go through the process's own logging format
        lifespan="off",  # the apps have no start-up or shut-down hooks
        access_log=False,
        # No proxy stands in front of the extender, so no X-Forwarded-* header is anyone's to trust: uvicorn's
        # ProxyHeadersMiddleware (on by default, trusting loopback) would only scan every request's headers, and
        # let a process on the same host rename itself in ``scope["client"]``.
        proxy_headers=False,
        # No WebSocket is served: an upgrade would hand a connection to another protocol behind the TLS gate's back,
        # which counts each connection until its HTTP protocol loses it (api.http.tls).
        ws="none",
        http=gated(http, gate.connection) if gate else http,  # TLS is the gate's: uvicorn serves plain TCP
        timeout_keep_alive=int(timeouts.keep_alive),
        timeout_graceful_shutdown=int(timeouts.graceful_shutdown),
    )
    config.load()
    return config, gate


def _bind(listener: Listener) -> socket.socket:
    family = socket.AF_INET6 if ":" in listener.host else socket.AF_INET
    try:
        return socket.create_server((listener.host, listener.port), family=family, backlog=2048)
    except OSError as err:
        raise ServeError(f"{listener.name} listener: cannot listen on {listener.url}: {err.strerror}") from None


def serve_listeners(
    listeners: Sequence[Listener],
    *,
    log_level: str,
    timeouts: Timeouts | None = None,
    tls_reload_seconds: float = 60.0,
    registry: CollectorRegistry | None = None,
) -> None:
    """Serve every listener until SIGINT or SIGTERM, then shut them all down gracefully.

    Raises ``ServeError`` before serving anything if a port cannot be bound or a certificate cannot be read.
    ``registry`` receives the TLS listeners' metrics (a fresh one by default, never the process-global one).
    """
    timeouts = timeouts or Timeouts()
    registry = registry if registry is not None else CollectorRegistry()
    built = [_config(listener, log_level=log_level, timeouts=timeouts, registry=registry) for listener in listeners]
    configs = [config for config, _ in built]
    sockets: list[socket.socket] = []
    try:
        for listener in listeners:
            sockets.append(_bind(listener))
    except ServeError:
        for sock in sockets:
            sock.close()
        raise
    servers = [QuietServer(config) for config in configs]
    reloaders = [
        TlsReloader(listener.name, listener.tls, gate.context)
        for listener, (_, gate) in zip(listeners, built, strict=True)
        if listener.tls is not None and gate is not None
    ]
    for listener in listeners:
        tls = listener.tls
        log.info(
            "listening listener=%s url=%s client_certificates=%s%s",
            listener.name,
            listener.url,
            "required" if tls and tls.client_ca else "none",
            f" client_sans={','.join(tls.client_sans) or '*'} handshake_timeout={tls.handshake_timeout:g}s"
            if tls
            else "",
        )

    def stop(signum: int, frame: FrameType | None) -> None:
        for server in servers:
            ask_to_stop(server, insist=signum == signal.SIGINT)  # a second Ctrl-C: stop waiting for open connections

    async def watch_certificates() -> None:
        while True:
            await asyncio.sleep(tls_reload_seconds)
            for reloader in reloaders:
                reloader.check()

    async def serve_all() -> None:
        watcher = asyncio.create_task(watch_certificates()) if reloaders else None
        try:
            await asyncio.gather(*(s.serve(sockets=[sock]) for s, sock in zip(servers, sockets, strict=True)))
        finally:
            if watcher is not None:
                watcher.cancel()

    handled = (signal.SIGINT, signal.SIGTERM)
    in_main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, stop) for sig in handled} if in_main else {}
    try:
        with asyncio.Runner(loop_factory=loop_factory(configs[0])) as runner:
            runner.run(serve_all())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sock in sockets:
            sock.close()
