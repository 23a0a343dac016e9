"""kube-scheduler's verbs over HTTP/2 served whole (``api.http.whole_requests.WholeRequests``): the same answers as
through ASGI, for good and bad requests alike, and the bounds of a request still arriving."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from h2.errors import ErrorCodes
from h2.events import DataReceived, Event, ResponseReceived, StreamEnded, StreamReset
from prometheus_client import CollectorRegistry
from starlette.types import Receive, Scope, Send

from api.extender import ExtenderArgs, ExtenderFilterResult
from api.http.app import create_app
from api.http.http2 import WHOLE_BYTES
from api.http.whole_requests import Reply, WholeHandler, WholeRequests
from tests.api.http.test_app import POD, EchoExtender
from tests.api.http.test_http2 import Client

BIND = {"PodName": "p", "PodNamespace": "default", "PodUID": "u1", "Node": "a"}


class Counted:
    """The app as served, counting which way each request reached it."""

    def __init__(self, app: Any) -> None:
        self.app: Any = app
        assert isinstance(app, WholeRequests)
        self.asgi: list[str] = []
        self.whole_calls: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.asgi.append(scope["path"])
        await self.app(scope, receive, send)

    def whole(self, method: str, path: str) -> WholeHandler | None:
        handler = self.app.whole(method, path)
        if handler is None:
            return None

        async def counted(body: bytes, headers: list[tuple[bytes, bytes]]) -> Any:
            self.whole_calls.append(path)
            return await handler(body, headers)

        return counted


class AsgiOnly:
    """The app as served, without its whole-request handlers: every request through ASGI."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class Unencodable(EchoExtender):
    async def filter(self, args: ExtenderArgs) -> ExtenderFilterResult:
        return "not a model"  # type: ignore[return-value]  # a bug outside the verb's own guard


def served(extender: EchoExtender) -> Counted:
    return Counted(create_app(extender, registry=CollectorRegistry(), max_body_bytes=4096))


def send(client: Client, path: bytes, body: bytes, *, pieces: int, length: bool = True) -> int:
    """A POST of ``body`` in ``pieces`` DATA frames, each delivered in its own read."""
    stream = client.h2.get_next_available_stream_id()
    headers = [(b":method", b"POST"), (b":path", path), (b":scheme", b"https"), (b":authority", b"extender")]
    headers += [(b"content-type", b"application/json")]
    if length:
        headers += [(b"content-length", b"%d" % len(body))]
    client.h2.send_headers(stream, headers, end_stream=not body)
    step = -(-len(body) // pieces) if body else 0
    for start in range(0, len(body), step or 1):
        client.h2.send_data(stream, body[start : start + step], end_stream=start + step >= len(body))
        if start + step < len(body):
            client.server.data_received(client.h2.data_to_send())
    return stream


async def answer(client: Client, stream: int) -> tuple[bytes, list[tuple[bytes, bytes]], bytes]:
    for _ in range(20):
        await client.pump()
        for event in client.events:
            if isinstance(event, DataReceived) and event.flow_controlled_length:
                client.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id or 0)
        if any(isinstance(e, StreamEnded) and e.stream_id == stream for e in client.events):
            break
    heads = [e for e in client.events if isinstance(e, ResponseReceived) and e.stream_id == stream]
    assert len(heads) == 1, client.events
    headers = [(bytes(n), bytes(v)) for n, v in heads[0].headers or []]
    body = b"".join(e.data or b"" for e in client.events if isinstance(e, DataReceived) and e.stream_id == stream)
    return dict(headers)[b":status"], headers, body


CASES = [
    pytest.param(b"/filter", json.dumps({"Pod": POD, "NodeNames": ["a", "b"]}), True, b"200", "", id="filter"),
    pytest.param(b"/bind", json.dumps(BIND), True, b"200", "", id="bind"),
    pytest.param(b"/prioritize", json.dumps({"Pod": POD, "NodeNames": ["a"]}), True, b"200", "", id="prioritize"),
    pytest.param(b"/filter", "{not json", True, b"400", "filter", id="malformed-json"),
    pytest.param(b"/filter", json.dumps({"Pod": POD, "NodeNames": "a"}), True, b"400", "NodeNames", id="wrong-type"),
    pytest.param(b"/bind", json.dumps({"PodName": "p"}), True, b"400", "PodNamespace", id="bind-missing-field"),
    pytest.param(b"/filter", "[" + "1," * 2100 + "1]", True, b"413", "body of 4203 bytes", id="declared-too-large"),
    pytest.param(b"/filter", "[" + "1," * 2100 + "1]", False, b"413", "body exceeds", id="too-large"),
]


@pytest.mark.parametrize(("path", "body", "length", "status", "named"), CASES)
def test_a_verb_served_whole_answers_what_asgi_answers(
    path: bytes, body: str, length: bool, status: bytes, named: str
) -> None:
    """The same request to the same app, served whole and through ASGI: the same status, fields and body."""

    async def run(app: Any) -> tuple[bytes, list[tuple[bytes, bytes]], bytes]:
        client = Client(app)
        await client.pump()
        return await answer(client, send(client, path, body.encode(), pieces=1, length=length))

    app = served(EchoExtender())
    whole = asyncio.run(run(app))
    asgi = asyncio.run(run(AsgiOnly(app)))
    assert app.whole_calls == [path.decode()] and app.asgi == [path.decode()]
    assert whole == asgi
    assert whole[0] == status
    if named:
        assert named in json.loads(whole[2])["Error"]


def test_a_failure_outside_the_verbs_guard_is_a_503_in_the_wire_format_either_way(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def run(app: Any) -> tuple[bytes, list[tuple[bytes, bytes]], bytes]:
        client = Client(app)
        await client.pump()
        body = json.dumps({"Pod": POD, "NodeNames": ["a"]}).encode()
        return await answer(client, send(client, b"/filter", body, pieces=1))

    app = served(Unencodable())
    whole, asgi = asyncio.run(run(app)), asyncio.run(run(AsgiOnly(app)))
    assert (whole[0], sorted(whole[1]), whole[2]) == (asgi[0], sorted(asgi[1]), asgi[2])  # Starlette's order
    assert whole[0] == b"503"
    assert json.loads(whole[2]) == {"Error": "grove-extender: internal error: AttributeError"}
    assert sum(1 for r in caplog.records if r.exc_info) == 2  # logged once each


def test_a_body_that_ends_in_a_later_read_is_still_served_whole() -> None:
    """Python's h2 clients end a stream with an empty DATA frame of their own, often in a later read."""

    async def run() -> tuple[Counted, tuple[bytes, list[tuple[bytes, bytes]], bytes]]:
        app = served(EchoExtender())
        client = Client(app)
        await client.pump()
        body = json.dumps({"Pod": POD, "NodeNames": ["a"]}).encode()
        stream = client.h2.get_next_available_stream_id()
        fields = [(b":method", b"POST"), (b":path", b"/filter"), (b":scheme", b"https"), (b":authority", b"x")]
        client.h2.send_headers(stream, fields)
        for piece in (body[:10], body[10:]):  # each in its own read, neither with END_STREAM
            client.h2.send_data(stream, piece)
            await client.pump()
        client.h2.end_stream(stream)
        return app, await answer(client, stream)

    app, (status, _, body) = asyncio.run(run())
    assert status == b"200" and json.loads(body)["NodeNames"] == ["a"]
    assert app.whole_calls == ["/filter"] and app.asgi == []


def test_bodies_arriving_beyond_what_a_connection_holds_go_through_asgi_and_are_served() -> None:
    """Held unacknowledged, bodies still arriving would close the connection's window to every stream: past
    ``WHOLE_BYTES`` (for all of them together) a stream is read through ASGI as its body comes."""
    names = [f"node-{i:05d}" for i in range(1_000)]  # 14 KB
    body = json.dumps({"Pod": POD, "NodeNames": names}).encode()
    assert WHOLE_BYTES // 2 < len(body) < WHOLE_BYTES

    async def run() -> tuple[Counted, list[tuple[bytes, list[tuple[bytes, bytes]], bytes]]]:
        app = Counted(create_app(EchoExtender(), registry=CollectorRegistry()))
        client = Client(app)
        await client.pump()
        streams = []
        for _ in range(2):  # each within the limit, not both
            stream = client.h2.get_next_available_stream_id()
            fields = [(b":method", b"POST"), (b":path", b"/filter"), (b":scheme", b"https"), (b":authority", b"x")]
            client.h2.send_headers(stream, fields)
            client.h2.send_data(stream, body[:-1])
            streams.append(stream)
        client.server.data_received(client.h2.data_to_send())
        for stream in streams:
            client.h2.send_data(stream, body[-1:], end_stream=True)
        return app, [await answer(client, stream) for stream in streams]

    app, replies = asyncio.run(run())
    assert [status for status, _, _ in replies] == [b"200", b"200"]
    assert all(json.loads(reply)["NodeNames"] == names for _, _, reply in replies)
    assert app.whole_calls == ["/filter"] and app.asgi == ["/filter"]


@pytest.mark.parametrize("method", [b"GET", b"PUT"])
def test_another_method_on_a_verb_goes_through_asgi_and_is_refused(method: bytes) -> None:
    async def run() -> tuple[Counted, tuple[bytes, list[tuple[bytes, bytes]], bytes]]:
        app = served(EchoExtender())
        client = Client(app)
        stream = client.h2.get_next_available_stream_id()
        fields = [(b":method", method), (b":path", b"/filter"), (b":scheme", b"https"), (b":authority", b"x")]
        client.h2.send_headers(stream, fields, end_stream=True)
        return app, await answer(client, stream)

    app, (status, headers, _) = asyncio.run(run())
    assert status == b"405" and (b"allow", b"POST") in headers
    assert app.whole_calls == [] and app.asgi == ["/filter"]


def test_a_verb_whose_body_never_arrives_is_reset_at_the_request_timeout_and_never_served() -> None:
    async def run() -> tuple[Counted, list[Event], int]:
        app = served(EchoExtender())
        client = Client(app, request_timeout=0.2)
        stream = client.h2.get_next_available_stream_id()
        fields = [(b":method", b"POST"), (b":path", b"/bind"), (b":scheme", b"https"), (b":authority", b"x")]
        client.h2.send_headers(stream, fields)  # and then no body
        await client.pump()
        events = await client.pump(0.4)
        return app, events, stream

    app, events, stream = asyncio.run(run())
    resets = [e for e in events if isinstance(e, StreamReset)]
    assert [(e.stream_id, e.error_code) for e in resets] == [(stream, ErrorCodes.CANCEL)]
    assert app.whole_calls == [] and app.asgi == []


def test_a_verb_the_client_cancels_before_its_body_arrives_is_never_served_and_others_are() -> None:
    async def run() -> tuple[Counted, tuple[bytes, list[tuple[bytes, bytes]], bytes]]:
        app = served(EchoExtender())
        client = Client(app)
        cancelled = client.h2.get_next_available_stream_id()
        fields = [(b":method", b"POST"), (b":path", b"/bind"), (b":scheme", b"https"), (b":authority", b"x")]
        client.h2.send_headers(cancelled, fields)
        await client.pump()
        client.h2.reset_stream(cancelled)
        await client.pump()
        return app, await answer(client, send(client, b"/bind", json.dumps(BIND).encode(), pieces=1))

    app, (status, _, _) = asyncio.run(run())
    assert status == b"200" and app.whole_calls == ["/bind"] and app.asgi == []


class Gate:
    """Whole-request handlers that answer at once, after a wait, or fail after one."""

    def __init__(self) -> None:
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.cancelled = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raise AssertionError("every path here is served whole")

    def whole(self, method: str, path: str) -> WholeHandler | None:
        return {"/now": self.now, "/later": self.later, "/fail": self.fail}.get(path)

    async def now(self, body: bytes, headers: list[tuple[bytes, bytes]]) -> Reply:
        return 200, [(b"content-length", b"%d" % len(body))], body

    async def later(self, body: bytes, headers: list[tuple[bytes, bytes]]) -> Reply:
        try:
            await self.opened
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return await self.now(body, headers)

    async def fail(self, body: bytes, headers: list[tuple[bytes, bytes]]) -> Reply:
        await asyncio.sleep(0)
        raise RuntimeError("failed after a wait")


def others() -> set[asyncio.Task[Any]]:
    return asyncio.all_tasks() - {asyncio.current_task()}


def replies(client: Client, *streams: int) -> list[bytes]:
    data = [e for e in client.events if isinstance(e, DataReceived)]
    return [b"".join(e.data or b"" for e in data if e.stream_id == stream) for stream in streams]


def test_an_answer_that_never_waits_is_given_no_task_and_one_that_waits_is_carried_on() -> None:
    async def run() -> tuple[int, list[int], list[int], list[bytes]]:
        gate = Gate()
        client = Client(gate)
        await client.pump()
        later = client.request(b"/later", b"second")
        now = client.request(b"/now", b"first")
        client.server.data_received(client.h2.data_to_send())
        tasks = len(others())  # the waiting one's alone
        await client.pump()
        gate.opened.set_result(None)
        await client.pump()
        ended = [e.stream_id or 0 for e in client.events if isinstance(e, StreamEnded)]
        return tasks, ended, [now, later], replies(client, now, later)

    tasks, ended, order, bodies = asyncio.run(run())
    assert tasks == 1
    assert ended == order and bodies == [b"first", b"second"]


def test_a_waiting_answer_that_fails_resets_its_stream_alone(caplog: pytest.LogCaptureFixture) -> None:
    async def run() -> tuple[list[Event], int, int]:
        client = Client(Gate())
        failing = client.request(b"/fail", b"x")
        await client.pump()
        served = client.request(b"/now", b"y")
        await client.pump()
        return client.events, failing, served

    events, failing, served = asyncio.run(run())
    resets = [(e.stream_id, e.error_code) for e in events if isinstance(e, StreamReset)]
    assert resets == [(failing, ErrorCodes.INTERNAL_ERROR)]
    assert [e.stream_id for e in events if isinstance(e, StreamEnded)] == [served]
    assert any("failed after a wait" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_cancelling_the_task_that_carries_a_waiting_answer_reaches_the_answer() -> None:
    """As at a forced shutdown: the cancellation is thrown into the handler where it waits, as ``yield from``
    would, so its own clean-up runs."""

    async def run() -> bool:
        gate = Gate()
        client = Client(gate)
        client.request(b"/later", b"x")
        await client.pump()
        for task in others():
            task.cancel()
        await client.pump()
        return gate.cancelled

    assert asyncio.run(run())
