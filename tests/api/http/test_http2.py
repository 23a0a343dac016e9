"""``api.http.http2`` frame by frame, against h2's own client state machine over an in-memory transport: the bounds a
slow or greedy client meets, and flow control both ways. Real sockets and TLS: ``tests/api/http/test_serve_http.py``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.errors import ErrorCodes
from h2.events import ConnectionTerminated, DataReceived, Event, ResponseReceived, StreamEnded, StreamReset
from hyperframe.frame import DataFrame
from starlette.types import ASGIApp, Receive, Scope, Send

from api.http.http2 import Http2Protocol


class Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.sent = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.sent.extend(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 40000) if name in ("peername", "sockname") else default


class State:
    def __init__(self) -> None:
        self.connections: set[Any] = set()
        self.tasks: set[asyncio.Task[None]] = set()


class Client:
    """h2's client side wired to one ``Http2Protocol``; ``pump`` lets the server's loop run, then reads its frames."""

    def __init__(self, app: ASGIApp, *, request_timeout: float = 5.0, keep_alive: float = 5.0) -> None:
        self.transport = Transport()
        self.server = Http2Protocol(
            app=app,
            server_state=State(),
            request_timeout=request_timeout,
            keep_alive=keep_alive,
            max_header_bytes=65536,
        )
        self.server.connection_made(self.transport)
        self.h2 = H2Connection(H2Configuration(client_side=True, header_encoding=None))
        self.h2.initiate_connection()
        self.events: list[Event] = []

    async def pump(self, seconds: float = 0.0) -> list[Event]:
        data = self.h2.data_to_send()
        if data:
            self.server.data_received(data)
        await asyncio.sleep(seconds)
        for _ in range(5):
            await asyncio.sleep(0)
        received, self.transport.sent = bytes(self.transport.sent), bytearray()
        events = self.h2.receive_data(received) if received else []
        self.events.extend(events)
        return events

    def request(self, path: bytes, body: bytes, *, end: bool = True) -> int:
        stream = self.h2.get_next_available_stream_id()
        headers = [(b":method", b"POST"), (b":path", path), (b":scheme", b"https"), (b":authority", b"extender")]
        self.h2.send_headers(stream, headers)
        if body or end:
            self.h2.send_data(stream, body, end_stream=end)
        return stream


async def echo(scope: Scope, receive: Receive, send: Send) -> None:
    """Answers the body it read, times 1,000 (a reply larger than the client's window)."""
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
        body += message["body"]
        if not message["more_body"]:
            break
    reply = body * 1000
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(reply))]})
    await send({"type": "http.response.body", "body": reply})


def test_a_reply_larger_than_the_clients_window_waits_for_it_and_arrives_whole() -> None:
    async def run() -> bytes:
        client = Client(echo)
        stream = client.request(b"/filter", b"0123456789abcdef")  # 16,000 bytes back: over 65,535 with 5 of them
        for _ in range(4):
            client.request(b"/filter", b"0123456789abcdef")
        received = bytearray()
        for _ in range(200):
            for event in await client.pump():
                if isinstance(event, DataReceived) and event.data is not None:
                    client.h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id or 0)
                    if event.stream_id == stream:
                        received.extend(event.data)
            if sum(isinstance(e, StreamEnded) for e in client.events) == 5:
                break
        assert sum(isinstance(e, StreamEnded) for e in client.events) == 5
        return bytes(received)

    assert asyncio.run(run()) == b"0123456789abcdef" * 1000


def test_a_request_that_never_finishes_arriving_is_reset_and_its_app_told() -> None:
    seen: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            seen.append(message["type"])
            if message["type"] == "http.disconnect":
                return

    async def run() -> list[Event]:
        client = Client(app, request_timeout=0.2)
        client.request(b"/filter", b'{"Pod": ', end=False)  # half a body, then nothing
        await client.pump()
        return await client.pump(0.4)

    events = asyncio.run(run())
    resets = [e for e in events if isinstance(e, StreamReset)]
    assert len(resets) == 1 and resets[0].error_code == ErrorCodes.CANCEL
    assert seen == ["http.request", "http.disconnect"]


def test_each_unfinished_request_is_reset_at_its_own_deadline_and_the_finished_ones_are_served() -> None:
    """One timer serves every stream's deadline: it must wake again for a later stream after the first expires."""

    async def run() -> tuple[list[int], list[int], list[int]]:
        client = Client(echo, request_timeout=0.3)
        first = client.request(b"/filter", b'{"Pod": ', end=False)
        await client.pump(0.15)
        second = client.request(b"/filter", b'{"Pod": ', end=False)
        served = client.request(b"/filter", b"a")  # arrives whole: its deadline must not touch it
        early = await client.pump(0.2)  # 0.35 s: the first is due, the second not before 0.45 s
        late = await client.pump(0.2)

        def reset(events: list[Event]) -> list[int]:
            return [e.stream_id or 0 for e in events if isinstance(e, StreamReset)]

        ended = [e.stream_id or 0 for e in early if isinstance(e, StreamEnded)]
        assert ended == [served]
        return reset(early), reset(late), [first, second]

    early, late, (first, second) = asyncio.run(run())
    assert (early, late) == ([first], [second])


def test_an_early_answer_reads_the_rest_of_its_request_and_keeps_the_connection_window_open() -> None:
    async def refuse(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def run() -> list[Event]:
        client = Client(refuse)
        stream = client.request(b"/nothing-here", b"x" * 16_000, end=False)
        await client.pump()
        for _ in range(10):  # 160 KB more than one connection window: only sent if the server keeps reopening it
            client.h2.send_data(stream, b"x" * 16_000)
            await client.pump()
        client.h2.end_stream(stream)
        await client.pump()
        second = client.request(b"/nothing-here", b"")
        events = await client.pump()
        return [e for e in events if isinstance(e, ResponseReceived) and e.stream_id == second]

    # Had the server stopped acknowledging the answered stream's data, h2's client would have refused to send it.
    assert len(asyncio.run(run())) == 1


def test_an_idle_connection_is_closed_with_a_goaway() -> None:
    async def run() -> tuple[list[Event], bool]:
        client = Client(echo, keep_alive=0.2)
        client.request(b"/filter", b"a")
        await client.pump()
        events = await client.pump(0.4)
        return events, client.transport.closed

    events, closed = asyncio.run(run())
    assert any(isinstance(e, ConnectionTerminated) for e in events) and closed
    assert not any(isinstance(e, StreamReset) for e in events)


def test_a_connection_is_closed_a_whole_keep_alive_after_its_last_request_not_its_first() -> None:
    async def run() -> tuple[bool, bool]:
        client = Client(echo, keep_alive=0.3)
        client.request(b"/filter", b"a")
        await client.pump(0.2)
        client.request(b"/filter", b"b")  # idle again from 0.2 s: open until 0.5 s
        await client.pump(0.2)
        open_at_04 = not client.transport.closed
        await client.pump(0.25)
        return open_at_04, client.transport.closed

    assert asyncio.run(run()) == (True, True)


def test_responses_arrive_as_one_write_per_turn_of_the_loop() -> None:
    async def run() -> tuple[int, list[Event]]:
        client = Client(echo)
        await client.pump()
        writes = 0
        original = client.transport.write

        def counting(data: bytes | bytearray | memoryview) -> None:
            nonlocal writes
            writes += 1
            original(data)

        client.transport.write = counting  # type: ignore[method-assign]
        client.request(b"/bind", b"a")  # HEADERS and a DATA frame of 1,000 bytes back
        events = await client.pump()
        return writes, events

    writes, events = asyncio.run(run())
    assert writes == 1
    assert [type(e) for e in events if isinstance(e, (ResponseReceived, StreamEnded))] == [
        ResponseReceived,
        StreamEnded,
    ]


GOOD = [(b":method", b"POST"), (b":scheme", b"https"), (b":path", b"/filter"), (b":authority", b"extender")]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ([*GOOD, (b"Content-Type", b"application/json")], "'Content-Type'"),
        ([*GOOD, (b"", b"x")], "field name '' is empty"),
        ([*GOOD, (b"x:y", b"1")], "'x:y'"),
        ([*GOOD, (b"x\xff", b"1")], "'x\\\\xff'"),
        ([*GOOD, (b"x-note", b"a\r\nx-injected: 1")], "'x-note' has NUL, CR or LF"),
        ([*GOOD, (b"x-note", b" padded")], "'x-note' has NUL, CR or LF in its value, or white space"),
        ([*GOOD, (b"connection", b"keep-alive")], "'connection' is connection-specific"),
        ([*GOOD, (b"te", b"gzip")], "'te' is connection-specific"),
        ([*GOOD, (b"host", b"a"), (b"host", b"a")], "'host' repeated"),
        ([*GOOD, (b"host", b"elsewhere")], "':authority' and 'host' differ"),
        (GOOD[:3], "neither ':authority' nor 'host'"),
        ([GOOD[0], GOOD[1], GOOD[3]], "':path' missing"),
        ([GOOD[0], GOOD[1], (b":path", b""), GOOD[3]], "':path' missing or empty"),
        ([*GOOD, (b":method", b"GET")], "':method' repeated"),
        ([*GOOD, (b":status", b"200")], "':status' is not one of a request's"),
        ([*GOOD[:3], (b"accept", b"*/*"), GOOD[3]], "':authority' after regular fields"),
        ([(b":method", b"P\xc3\x96ST"), *GOOD[1:]], "not ASCII"),
    ],
)
def test_a_malformed_request_gets_a_400_naming_the_field_and_the_connection_serves_on(
    fields: list[tuple[bytes, bytes]], named: str
) -> None:
    """h2's own header checks are off (``api.http.request_fields`` does them in one pass): a malformed request must
    still never reach the app, and is answered, not dropped with the whole connection as h2 did."""
    reached: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope["path"])
        await echo(scope, receive, send)

    async def run() -> tuple[list[Event], int, int]:
        client = Client(app)
        lenient = H2Configuration(
            client_side=True, header_encoding=None, validate_outbound_headers=False, normalize_outbound_headers=False
        )
        client.h2.config = lenient
        bad = client.h2.get_next_available_stream_id()
        client.h2.send_headers(bad, fields)
        client.h2.send_data(bad, b"x" * 100, end_stream=True)
        await client.pump()
        good = client.request(b"/filter", b"a")
        await client.pump()
        return client.events, bad, good

    events, bad, good = asyncio.run(run())
    status = {e.stream_id: dict(e.headers or [])[b":status"] for e in events if isinstance(e, ResponseReceived)}
    body = b"".join(e.data or b"" for e in events if isinstance(e, DataReceived) and e.stream_id == bad).decode()
    assert status == {bad: b"400", good: b"200"}
    assert body.startswith("malformed HTTP/2 request: ") and named in body, body
    assert reached == ["/filter"]  # the good request alone
    assert not any(isinstance(e, (ConnectionTerminated, StreamReset)) for e in events)


def test_a_frame_is_shown_by_its_type_and_stream_alone() -> None:
    """h2 renders every frame it receives for a trace log nobody reads: once ``api.http.http2`` serves a connection,
    that rendering is cheap (``api.http.fences.hyperframe_fence``, installed then rather than at import)."""

    async def serve_one() -> None:
        Client(echo)

    asyncio.run(serve_one())
    assert repr(DataFrame(3, b"x" * 1600, flags=["END_STREAM"])) == "DataFrame(stream_id=3)"


def test_the_same_header_fields_again_are_read_afresh_for_each_stream() -> None:
    """A connection reads each distinct set of header fields once: what one stream's app does to its scope's
    headers must not reach the next stream that sent the same ones."""
    seen: list[list[tuple[bytes, bytes]]] = []

    async def meddling(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(list(scope["headers"]))
        scope["headers"].append((b"x-meddled", b"1"))
        await echo(scope, receive, send)

    async def run() -> None:
        client = Client(meddling)
        for path in (b"/filter", b"/other", b"/filter"):
            client.request(path, b"a")
            await client.pump()

    asyncio.run(run())
    assert seen[0] == seen[2] == seen[1] == [(b"host", b"extender")]
