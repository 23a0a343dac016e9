"""uvicorn's internals that serving relies on: its HTTP/1.1 protocol, how its server makes and shuts down
connections, and the hooks of the server we quiet.

- **The httptools protocol, subclassed.** ``uvicorn.protocols.http.httptools_impl.HttpToolsProtocol`` is not API.
  ``DeadlineProtocol`` bounds each request (a deadline from its first byte, a cap on header bytes), which uvicorn does
  not: it overrides ``connection_made``/``connection_lost`` and the parser callbacks ``on_message_begin``, ``on_url``,
  ``on_header`` and ``on_message_complete`` (calling uvicorn's after its own), and uses ``self.loop``,
  ``self.transport``, ``self.client`` and ``send_400_response``.
- **A protocol factory in place of the class.** uvicorn calls ``Config.http`` as ``http(config=, server_state=,
  app_state=, _loop=)`` for each connection (``Server.startup``'s ``create_protocol``); ``gated`` answers that call
  with the protocol wrapped by a TLS gate (``api.http.tls``).
- **The HTTP/1.1 protocol's app and server state.** An HTTP/2 connection (``api.http.http2``) is made from the
  protocol uvicorn made for it (ALPN chooses after uvicorn accepted), from its ``app`` and ``server_state``.
- **The graceful shutdown's contract** (``ServerState``): uvicorn keeps its server's connections in
  ``server_state.connections``, calls ``shutdown()`` on each when it stops, and waits until the set is empty and
  every task in ``server_state.tasks`` is done (cancelling those past ``timeout_graceful_shutdown``). Our HTTP/2
  protocol joins both sets, so it is drained like uvicorn's own.
- **The server's hooks.** ``QuietServer`` overrides ``Server.capture_signals`` (one handler serves every listener)
  and the private ``Server._log_started_message`` (each listener is logged by us: uvicorn would call a TLS listener
  http://); ``ask_to_stop`` sets ``should_exit`` and ``force_exit``, which its main loop polls; ``loop_factory`` asks
  ``Config.get_loop_factory`` (uvloop when installed), which uvicorn says is not meant to be called from outside.

``tests/api/http/fences/test_uvicorn.py`` checks each against uvicorn itself: the class, the hooks' signatures, the
keywords uvicorn makes a protocol with, and a real serve and graceful shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, cast

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = [
    "DeadlineProtocol",
    "QuietServer",
    "ServerState",
    "ask_to_stop",
    "deadline_protocol",
    "gated",
    "loop_factory",
    "served_by",
]

log = logging.getLogger(__name__)


class ServerState(Protocol):
    """What uvicorn's server keeps of its connections and request tasks, for a graceful shutdown: each connection's
    ``shutdown()`` is called when it stops, then it waits for both sets to empty."""

    connections: set[Any]
    tasks: set[asyncio.Task[None]]


class DeadlineProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a deadline per request and a cap on header bytes."""

    request_timeout = 10.0
    max_header_bytes = 64 * 1024

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a connection that never sends a request is closed like one that sends half of it

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._arm()

    def on_url(self, url: bytes) -> None:
        self._count_header_bytes(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_header_bytes(len(name) + len(value))
        super().on_header(name, value)

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def _count_header_bytes(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > self.max_header_bytes and not self.transport.is_closing():
            log.info("closing a connection whose headers exceed %d bytes client=%s", self.max_header_bytes, self.client)
            self.send_400_response(f"request headers exceed {self.max_header_bytes} bytes")

    def _arm(self) -> None:
        if self._deadline is None:
            self._deadline = self.loop.call_later(self.request_timeout, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            log.info(
                "closing a connection whose request did not arrive within %gs client=%s",
                self.request_timeout,
                self.client,
            )
            self.transport.close()


def deadline_protocol(*, request_timeout: float, max_header_bytes: int) -> type[DeadlineProtocol]:
    """A ``DeadlineProtocol`` class with these bounds, for ``uvicorn.Config(http=...)``."""
    bounds = {"request_timeout": request_timeout, "max_header_bytes": max_header_bytes}
    return type("DeadlineProtocol", (DeadlineProtocol,), bounds)


def gated(
    http: type[HttpToolsProtocol], wrap: Callable[[asyncio.Protocol], asyncio.Protocol]
) -> type[asyncio.Protocol]:
    """A protocol "class" for ``uvicorn.Config(http=...)`` that hands each connection's ``http`` protocol to
    ``wrap`` (a TLS gate) and gives uvicorn what ``wrap`` returns."""

    def make(**kwargs: Any) -> asyncio.Protocol:  # uvicorn's keywords: config, server_state, app_state, _loop
        return wrap(http(**kwargs))

    return make  # type: ignore[return-value]  # uvicorn calls it like the class it expects


def served_by(http: asyncio.Protocol) -> tuple[ASGIApp, ServerState]:
    """The app and the server state of the HTTP/1.1 protocol uvicorn made for a connection (one of ``gated``'s)."""
    one = cast(HttpToolsProtocol, http)
    return one.app, cast(ServerState, one.server_state)


class QuietServer(uvicorn.Server):
    """One listener's server: no signal handlers of its own (whoever serves several listeners handles the signals
    for all of them, with ``ask_to_stop``), and no start-up line (whoever serves it logs its listener)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def _log_started_message(self, listeners: Sequence[socket.SocketType]) -> None:
        """Silent: uvicorn would call a TLS listener whose TLS it does not do (``api.http.tls``) http://."""


def ask_to_stop(server: uvicorn.Server, *, insist: bool) -> None:
    """Ask ``server`` to shut down gracefully; asked again with ``insist`` (a second Ctrl-C), it stops waiting for
    open connections."""
    if insist and server.should_exit:
        server.force_exit = True
    server.should_exit = True


def loop_factory(config: uvicorn.Config) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop uvicorn would run ``config`` on (uvloop when installed), for a runner serving several."""
    return config.get_loop_factory()
