"""``api.http.fences.uvicorn_fence`` against uvicorn as installed: the private protocol class and the hooks
``DeadlineProtocol`` overrides, the keywords uvicorn makes a connection's protocol with, and a real server on
loopback: each connection's bounds, no start-up line and no signal handlers of its own, a graceful shutdown that asks
each connection in its server state to shut down and waits for it, and a second request that stops the waiting."""

from __future__ import annotations

import asyncio
import inspect
import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from api.http.fences.uvicorn_fence import (
    DeadlineProtocol,
    QuietServer,
    ask_to_stop,
    deadline_protocol,
    gated,
    loop_factory,
    served_by,
)

HOOKS = {
    "__init__": ["self", "config", "server_state", "app_state", "_loop"],
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "data_received": ["self", "data"],
    "on_message_begin": ["self"],
    "on_url": ["self", "url"],
    "on_header": ["self", "name", "value"],
    "on_headers_complete": ["self"],
    "on_body": ["self", "body"],
    "on_message_complete": ["self"],
}
FIELDS = 8  # the test server's cap on header fields


@pytest.mark.parametrize("hook", HOOKS)
def test_the_httptools_protocol_keeps_the_hooks_deadline_protocol_overrides(hook: str) -> None:
    assert issubclass(DeadlineProtocol, HttpToolsProtocol)
    method = getattr(HttpToolsProtocol, hook, None)
    assert method is not None, f"uvicorn's HttpToolsProtocol.{hook} is gone: DeadlineProtocol relies on it"
    assert list(inspect.signature(method).parameters) == HOOKS[hook], f"uvicorn's HttpToolsProtocol.{hook} changed"


def test_the_server_keeps_the_hooks_and_state_quiet_server_and_ask_to_stop_use() -> None:
    assert "capture_signals" in vars(uvicorn.Server), "uvicorn.Server.capture_signals is gone (QuietServer)"
    assert "_log_started_message" in vars(uvicorn.Server), "uvicorn.Server._log_started_message is gone (QuietServer)"
    server = uvicorn.Server(uvicorn.Config(_ok))
    assert (server.should_exit, server.force_exit) == (False, False), "uvicorn.Server.should_exit/force_exit moved"
    state = ServerState()
    assert isinstance(state.connections, set) and isinstance(state.tasks, set), "uvicorn's ServerState changed"


async def _ok(scope: Scope, receive: Receive, send: Send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})


class _Lingering:
    """A connection in uvicorn's server state, as ``api.http.http2.Http2Protocol`` is: told to shut down, it leaves
    the set when ``leaves`` says so."""

    def __init__(self, state: ServerState, *, leaves: bool) -> None:
        self.state, self.leaves, self.told = state, leaves, 0
        state.connections.add(self)

    def shutdown(self) -> None:
        self.told += 1
        if self.leaves:
            self.state.connections.discard(self)


def _parsed(http: type[DeadlineProtocol]) -> type[DeadlineProtocol]:
    """``http``, counting the header fields its parser reports to it (``parsed``)."""

    class Parsed(http):  # type: ignore[valid-type,misc]
        parsed = 0

        def on_header(self, name: bytes, value: bytes) -> None:
            self.parsed += 1
            super().on_header(name, value)

    return Parsed


async def _serving(
    body: Callable[[QuietServer, tuple[str, int], list[asyncio.Protocol]], Awaitable[None]],
) -> tuple[QuietServer, list[asyncio.Protocol], list[dict[str, Any]]]:
    """``body`` run against a ``QuietServer`` on loopback whose connections go through ``gated``; the protocols it
    made and the keywords uvicorn made them with."""
    made: list[asyncio.Protocol] = []
    keywords: list[dict[str, Any]] = []
    http = _parsed(deadline_protocol(request_timeout=0.3, max_header_bytes=1024, max_header_fields=FIELDS))

    def recording(**kwargs: Any) -> HttpToolsProtocol:
        keywords.append(dict(kwargs))
        return http(**kwargs)

    def wrap(protocol: asyncio.Protocol) -> asyncio.Protocol:
        made.append(protocol)
        return protocol

    config = uvicorn.Config(
        _ok, http=gated(recording, wrap), lifespan="off", log_config=None, access_log=False, proxy_headers=False
    )
    config.load()
    server = QuietServer(config)
    sock = socket.create_server(("127.0.0.1", 0))
    address = sock.getsockname()[:2]
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        for _ in range(200):
            if server.started:
                break
            await asyncio.sleep(0.01)
        await body(server, address, made)
    finally:
        ask_to_stop(server, insist=True)
        ask_to_stop(server, insist=True)
        await asyncio.wait_for(serving, 10)
        sock.close()
    return server, made, keywords


async def _request(address: tuple[str, int], data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection(*address)
    writer.write(data)
    try:
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()


def test_a_real_server_makes_each_protocol_as_gated_expects_and_the_bounds_hold(
    caplog: pytest.LogCaptureFixture,
) -> None:
    replies: dict[str, bytes] = {}
    handlers: list[Any] = []

    async def body(server: QuietServer, address: tuple[str, int], made: list[asyncio.Protocol]) -> None:
        handlers.append(signal.getsignal(signal.SIGINT))
        replies["ok"] = await _request(address, b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        replies["big"] = await _request(address, b"GET / HTTP/1.1\r\nhost: x\r\nx-big: " + b"x" * 2000 + b"\r\n\r\n")
        replies["half"] = await _request(address, b"GET / HTTP/1.1\r\nhost: x\r\n")  # closed at its deadline
        app, state = served_by(made[0])
        assert app is server.config.loaded_app, "uvicorn's HttpToolsProtocol.app is not the app it serves"
        assert state is server.server_state, "uvicorn's HttpToolsProtocol.server_state is not its server's"

    before: list[Any] = []

    async def run() -> tuple[QuietServer, list[asyncio.Protocol], list[dict[str, Any]]]:
        before.append(signal.getsignal(signal.SIGINT))  # asyncio.run's own, on this thread
        return await _serving(body)

    with caplog.at_level(logging.INFO, logger="uvicorn.error"):
        _, made, keywords = asyncio.run(run())
    assert set(keywords[0]) == {"config", "server_state", "app_state", "_loop"}, "uvicorn makes protocols otherwise"
    assert all(isinstance(protocol, DeadlineProtocol) for protocol in made)
    assert replies["ok"].startswith(b"HTTP/1.1 200") and replies["ok"].endswith(b"ok")
    assert replies["big"].startswith(b"HTTP/1.1 400") and b"request headers exceed 1024 bytes" in replies["big"]
    assert replies["half"] == b""
    assert handlers == before, "uvicorn installed signal handlers: QuietServer.capture_signals no longer overrides"
    started = [r.getMessage() for r in caplog.records if "running on" in r.getMessage().lower()]
    assert not started, f"uvicorn logged {started}: QuietServer._log_started_message no longer overrides"


def _fields(count: int) -> bytes:
    return b"".join(b"x-%d: y\r\n" % i for i in range(count))


def test_a_request_of_too_many_header_fields_is_refused_and_its_head_mostly_unparsed() -> None:
    """The exact limit is the parser's count; a head far over it is refused from its bytes before the parser reads
    it; a head behind a body in the same read, which only the parser finds, is refused at the limit too."""
    replies: dict[str, bytes] = {}
    parsed: dict[str, int] = {}
    get = b"GET / HTTP/1.1\r\nconnection: close\r\n"
    sent = {
        "within": get + _fields(FIELDS - 1) + b"\r\n",
        "one-over": get + _fields(FIELDS) + b"\r\n",
        "far-over": get + _fields(1000) + b"\r\n",
        "behind-a-body": b"POST / HTTP/1.1\r\ncontent-length: 2\r\n\r\nhi" + get + _fields(1000) + b"\r\n",
    }

    async def body(server: QuietServer, address: tuple[str, int], made: list[asyncio.Protocol]) -> None:
        for name, data in sent.items():
            replies[name] = await _request(address, data)
            parsed[name] = getattr(made[-1], "parsed", -1)

    asyncio.run(_serving(body))
    refusal = f"request has more than {FIELDS} header fields".encode()
    assert replies["within"].startswith(b"HTTP/1.1 200")
    for name in ("one-over", "far-over"):
        assert replies[name].startswith(b"HTTP/1.1 431 Request Header Fields Too Large"), (name, replies[name])
        assert replies[name].endswith(b"\r\n\r\n" + refusal), (name, replies[name])
    assert b"HTTP/1.1 431" in replies["behind-a-body"] and replies["behind-a-body"].endswith(refusal)
    assert parsed["far-over"] <= FIELDS + 2, f"the parser read {parsed['far-over']} fields of a head refused unread"


def test_a_graceful_shutdown_tells_each_connection_in_the_server_state_and_waits_for_it() -> None:
    lingering: list[_Lingering] = []

    async def body(server: QuietServer, address: tuple[str, int], made: list[asyncio.Protocol]) -> None:
        connection = _Lingering(server.server_state, leaves=True)
        lingering.append(connection)
        server.server_state.tasks.add(asyncio.create_task(asyncio.sleep(0.2)))
        ask_to_stop(server, insist=True)  # the first request: graceful, even when insisting
        assert not server.force_exit

    asyncio.run(_serving(body))
    assert lingering[0].told == 1, "uvicorn no longer calls shutdown() on the connections in its server state"


def test_asked_again_the_server_stops_waiting_for_a_connection_that_stays() -> None:
    async def body(server: QuietServer, address: tuple[str, int], made: list[asyncio.Protocol]) -> None:
        _Lingering(server.server_state, leaves=False)

    asyncio.run(asyncio.wait_for(_serving(body), 10))  # _serving asks twice: without force_exit it would wait on


def test_the_loop_factory_is_uvicorns_choice() -> None:
    factory = loop_factory(uvicorn.Config(_ok))
    assert factory is not None, "uvicorn.Config.get_loop_factory no longer names a loop"
    loop = factory()
    try:
        assert type(loop).__module__.startswith("uvloop"), type(loop)
    finally:
        loop.close()
