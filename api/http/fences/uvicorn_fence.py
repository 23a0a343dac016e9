"""uvicorn's internals that serving relies on: its HTTP/1.1 protocol, how its server makes and shuts down
connections, and the hooks of the server we quiet.

- **The httptools protocol, subclassed.** ``uvicorn.protocols.http.httptools_impl.HttpToolsProtocol`` is not API.
  ``DeadlineProtocol`` bounds each request (a deadline from its first byte, caps on header bytes and fields), which
  uvicorn does not: it overrides ``connection_made``/``connection_lost``, ``data_received`` (to count a head's lines
  before the parser reads them) and the parser callbacks ``on_message_begin``, ``on_url``, ``on_header``,
  ``on_headers_complete``, ``on_body`` and ``on_message_complete`` (calling uvicorn's after its own, and none of
  them once it has refused the request), and uses ``self.loop``, ``self.transport`` and ``self.client``.
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
from http import HTTPStatus
from typing import Any, Protocol, cast

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from api.http.limits import head_line_ends

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
    """uvicorn's httptools protocol with a deadline per request and caps on its header bytes and fields.

    A head's fields are counted twice: its lines as they arrive, before the parser reads them (``head_line_ends``),
    so a head of thousands of empty fields costs one scan of its bytes, not a parser callback per field; and the
    fields the parser reports, which holds the exact limit, also for a head that follows a body in the same read,
    where the first count does not look. A refused request is answered, its connection closed, and whatever the
    parser still reads of it goes nowhere."""

    request_timeout = 10.0
    max_header_bytes = 64 * 1024
    max_header_fields = 100

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._header_bytes = 0
        self._header_fields = 0
        self._in_head = True  # what arrives next begins or continues a head (not a body)
        self._head_lines = 0
        self._last_bytes = b""
        self._refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()  # a connection that never sends a request is closed like one that sends half of it

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_lines += head_line_ends(data, self._last_bytes)
            # The request line, the fields, and an empty line the client may send first (head_line_ends): more is
            # certainly too many; the parser's count holds the exact limit.
            if self._head_lines > self.max_header_fields + 2:
                self._too_many_fields()
                return
        self._last_bytes = data[-2:] if len(data) >= 2 else (self._last_bytes + data)[-2:]
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._header_fields = 0
        self._arm()

    def on_url(self, url: bytes) -> None:
        self._count_header_bytes(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_fields += 1
        if self._header_fields > self.max_header_fields:
            self._too_many_fields()
        else:
            self._count_header_bytes(len(name) + len(value))
        if not self._refused:
            super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._head_lines = 0
        if not self._refused:  # a refused request never reaches the app
            super().on_headers_complete()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._in_head = True
        self._disarm()
        if not self._refused:
            super().on_message_complete()

    def _count_header_bytes(self, size: int) -> None:
        self._header_bytes += size
        if self._header_bytes > self.max_header_bytes:
            log.info("closing a connection whose headers exceed %d bytes client=%s", self.max_header_bytes, self.client)
            self._refuse(HTTPStatus.BAD_REQUEST, f"request headers exceed {self.max_header_bytes} bytes")

    def _too_many_fields(self) -> None:
        log.info(
            "closing a connection whose request has more than %d header fields client=%s",
            self.max_header_fields,
            self.client,
        )
        limit = self.max_header_fields
        self._refuse(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, f"request has more than {limit} header fields")

    def _refuse(self, status: HTTPStatus, reason: str) -> None:
        """Answer ``status`` with ``reason`` as its text and close the connection, once."""
        if self._refused or self.transport.is_closing():
            return
        self._refused = True
        body = reason.encode("ascii")
        head = (
            f"HTTP/1.1 {status.value} {status.phrase}\r\ncontent-type: text/plain; charset=utf-8\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        )
        self.transport.write(head.encode("ascii") + body)
        self.transport.close()

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


def deadline_protocol(
    *, request_timeout: float, max_header_bytes: int, max_header_fields: int
) -> type[DeadlineProtocol]:
    """A ``DeadlineProtocol`` class with these bounds, for ``uvicorn.Config(http=...)``."""
    bounds = {
        "request_timeout": request_timeout,
        "max_header_bytes": max_header_bytes,
        "max_header_fields": max_header_fields,
    }
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
