"""The same listeners served by hypercorn, the maintained ASGI server with HTTP/2, instead of ``api.http.server``.

For comparison only (``serve --http-server hypercorn``; ``benchmarks/bench_http2.py`` and ``bench_e2e --real``
run both in one run, ARCHITECTURE.md records what they showed and what was decided). The apps, the TLS context (our
``api.http.tls.server_context``: the same certificate, key, client CA and protocol floor) and the event loop
(uvloop) are the shipped ones, so what differs is the server alone.

What it does not do, and why it is not the default: hypercorn offers no hook after the handshake, so a client
certificate's names (``--client-san``) are not checked (any certificate the CA signed gets through), the handshake is
neither counted nor logged, and the certificate files are not re-read when they change; none of the bounds of
``api.http.server`` and ``api.http.http2`` beyond hypercorn's own apply. hypercorn is in the ``bench`` extra, not a
runtime dependency.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import uvloop

from api.http.server import MAX_HEADER_BYTES, Listener, ServeError, Timeouts
from api.http.tls import TlsError, server_context

if TYPE_CHECKING:  # hypercorn is imported when asked for: it is in the bench extra alone
    from hypercorn.config import Config

__all__ = ["serve_with_hypercorn"]

log = logging.getLogger(__name__)


def _config(listener: Listener, timeouts: Timeouts, log_level: str) -> Config:
    from hypercorn.config import Config

    tls = listener.tls
    context: ssl.SSLContext | None = None
    if tls is not None:
        try:
            context = server_context(tls)
        except TlsError as err:
            raise ServeError(f"{listener.name} listener: cannot load its TLS files: {err}") from None
        context.set_alpn_protocols(["h2", "http/1.1"])
        if tls.client_sans:
            log.warning(
                "hypercorn does not check client certificates' names listener=%s client_sans=%s: any certificate "
                "the client CA signed is accepted (comparison only)",
                listener.name,
                ",".join(tls.client_sans),
            )

    class _OurTls(Config):
        # Config builds its own context from file names; the shipped one (protocol floor, client CA) keeps the
        # comparison about the server alone.
        def create_ssl_context(self) -> ssl.SSLContext | None:
            return context

    config = _OurTls()
    host = f"[{listener.host}]" if ":" in listener.host else listener.host
    config.bind = [f"{host}:{listener.port}"]
    if tls is not None:
        config.certfile, config.keyfile = tls.cert, tls.key  # only so that Config.ssl_enabled says yes
        config.ssl_handshake_timeout = tls.handshake_timeout
    config.keep_alive_timeout = timeouts.keep_alive
    # hypercorn ends a connection after 1,000 requests by default; kube-scheduler keeps one for its whole life and a
    # new one costs a TLS handshake, as it would with the built-in server, which has no such limit.
    config.keep_alive_max_requests = 2**31
    config.read_timeout = int(timeouts.request)
    config.graceful_timeout = timeouts.graceful_shutdown
    config.h2_max_concurrent_streams = 256  # as api.http.http2's MAX_STREAMS
    config.h11_max_incomplete_size = MAX_HEADER_BYTES
    config.h2_max_header_list_size = MAX_HEADER_BYTES
    config.include_server_header = False
    config.include_date_header = False  # the built-in server sends none either
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.loglevel = log_level.upper()
    return config


def serve_with_hypercorn(listeners: Sequence[Listener], *, log_level: str, timeouts: Timeouts | None = None) -> None:
    """Serve every listener with hypercorn until SIGINT or SIGTERM (raises ``ServeError`` before serving when
    hypercorn is missing or a certificate cannot be read)."""
    try:
        from hypercorn.asyncio import serve
    except ImportError:
        raise ServeError("--http-server hypercorn needs hypercorn: pip install 'grove-extender[bench]'") from None
    timeouts = timeouts or Timeouts()
    configs = [_config(listener, timeouts, log_level) for listener in listeners]
    for listener in listeners:
        log.info("listening listener=%s url=%s server=hypercorn", listener.name, listener.url)

    async def serve_all() -> None:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()
        if sys.version_info >= (3, 12):
            # hypercorn starts a task per request: run it at once, up to its first wait, as the built-in server runs
            # its verbs (api.http.fences.eager_fence), so the comparison is of the servers, not of task starts.
            loop.set_task_factory(asyncio.eager_task_factory)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stopping.set)
        await asyncio.gather(
            *(
                serve(listener.app, config, shutdown_trigger=stopping.wait, mode="asgi")  # type: ignore[arg-type]
                for listener, config in zip(listeners, configs, strict=True)
            )
        )

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        try:
            runner.run(serve_all())
        except OSError as err:
            raise ServeError(f"cannot listen: {err.strerror}") from None
