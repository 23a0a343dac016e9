"""The budgets of one HTTP/2 connection (``api.http.http2``, ``api.http.budgets``), frame by frame against h2's own
client over an in-memory transport: streams counted until their work ends and refused alone past the limit; resets,
refusals and control frames over budget end the connection with GOAWAY ``ENHANCE_YOUR_CALM``; a reply the client
never makes room for, and a client that reads nothing, end it too; header blocks too large or with too many fields
end it before they are decoded; a bad ``content-length`` is a 400 on its own stream. Each over-budget case has a
within-budget twin that must not trip. The same attacks over mTLS against ``serve``: ``test_http2_attacks.py``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from h2.errors import ErrorCodes
from h2.events import ConnectionTerminated, DataReceived, Event, ResponseReceived, StreamReset
from h2.settings import SettingCodes
from prometheus_client import CollectorRegistry
from starlette.types import Receive, Scope, Send

from api.http import http2
from api.http.app import create_app
from api.http.budgets import Budget, QuietLog
from api.http.http2 import CHURN_BURST, CONTROL_BURST, MAX_STREAMS, WHOLE_BYTES
from api.http.limits import MAX_HEADER_BYTES, MAX_HEADER_FIELDS
from tests.api.http.test_app import EchoExtender
from tests.api.http.test_http2 import Client, Transport, echo

HEAD = [(b":method", b"POST"), (b":path", b"/filter"), (b":scheme", b"https"), (b":authority", b"extender")]


class PausableTransport(Transport):
    def __init__(self) -> None:
        super().__init__()
        self.reading = True
        self.aborted = False

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def abort(self) -> None:
        self.aborted = self.closed = True


class PausableClient(Client):
    transport: PausableTransport


def client(app: Any, **kwargs: Any) -> PausableClient:
    made = PausableClient(app, **kwargs)
    made.transport = PausableTransport()
    made.server.connection_made(made.transport)  # again, on the transport that can pause: the first had no reader
    return made


def calmed(events: list[Event]) -> bool:
    return any(isinstance(e, ConnectionTerminated) and e.error_code == ErrorCodes.ENHANCE_YOUR_CALM for e in events)


def statuses(events: list[Event]) -> dict[int, int]:
    return {e.stream_id or 0: int(dict(e.headers or [])[b":status"]) for e in events if isinstance(e, ResponseReceived)}


class Held:
    """An app whose every request waits for ``release``, whatever happens to its stream meanwhile."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.running = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.running += 1
        await self.release.wait()
        self.running -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"done"})


def test_a_stream_past_the_limit_is_refused_alone_and_a_reset_one_counts_until_its_work_ends() -> None:
    async def run() -> None:
        app = Held()
        c = client(app)
        first = [c.request(b"/filter", b"x") for _ in range(MAX_STREAMS)]
        await c.pump()
        assert app.running == MAX_STREAMS
        for stream in first[:10]:  # the client gives up on ten: their work goes on
            c.h2.reset_stream(stream)
        over = c.request(b"/filter", b"x")
        events = await c.pump()
        refused = [e for e in events if isinstance(e, StreamReset)]
        assert [(e.stream_id, e.error_code) for e in refused] == [(over, ErrorCodes.REFUSED_STREAM)]
        assert not c.transport.closed and not calmed(c.events)
        app.release.set()
        await c.pump()
        served = c.request(b"/filter", b"x")
        assert statuses(await c.pump()) == {served: 200}

    asyncio.run(run())


@pytest.mark.parametrize("resets", [CHURN_BURST // 2, CHURN_BURST * 2])
def test_streams_opened_and_reset_at_once_end_the_connection_past_their_budget(resets: int) -> None:
    async def run() -> list[Event]:
        c = client(echo)
        for _ in range(resets // 64):
            for _ in range(64):
                stream = c.request(b"/filter", b"", end=False)
                c.h2.reset_stream(stream)
            await c.pump()
            if c.transport.closed:
                break
        return c.events

    events = asyncio.run(run())
    assert calmed(events) == (resets > CHURN_BURST)


def _ping(c: Client, stream: int) -> None:
    c.h2.ping(b"12345678")


def _settings(c: Client, stream: int) -> None:
    c.h2.update_settings({SettingCodes.ENABLE_PUSH: 0})


def _window_update(c: Client, stream: int) -> None:
    c.h2.increment_flow_control_window(1)


def _priority(c: Client, stream: int) -> None:
    c.h2.prioritize(stream, weight=16)


def _empty_data(c: Client, stream: int) -> None:
    c.h2.send_data(stream, b"")


@pytest.mark.parametrize("flood", [_ping, _settings, _window_update, _priority, _empty_data])
@pytest.mark.parametrize("frames", [CONTROL_BURST // 2, CONTROL_BURST * 2])
def test_control_frames_end_the_connection_past_their_budget(flood: Any, frames: int) -> None:
    async def run() -> list[Event]:
        c = client(echo)
        stream = c.request(b"/filter", b"", end=False)  # open, for the frames that need one
        for _ in range(frames // 64):
            for _ in range(64):
                flood(c, stream)
            await c.pump()
            if c.transport.closed:
                break
        return c.events

    assert calmed(asyncio.run(run())) == (frames > CONTROL_BURST)


def test_a_connection_ended_for_overspending_is_aborted_if_its_close_hangs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A TLS close waits for the client to read and answer; one that floods without reading would hold the socket."""
    monkeypatch.setattr(http2, "ENDING_SECONDS", 0.1)

    async def run() -> tuple[bool, bool]:
        c = client(echo)
        while not c.transport.closed:
            for _ in range(64):
                c.h2.ping(b"12345678")
            await c.pump()
        closed, aborted = c.transport.closed, c.transport.aborted
        await asyncio.sleep(0.2)
        return closed and not aborted, c.transport.aborted

    assert asyncio.run(run()) == (True, True)


def test_requests_and_the_replies_they_read_earn_their_control_frames() -> None:
    """A client that reopens its window once per reply and pings now and then never runs out, however long."""

    async def run() -> list[Event]:
        c = client(echo)
        for _ in range(CONTROL_BURST * 2 // 64):
            for _ in range(64):
                c.request(b"/filter", b"a")
                c.h2.ping(b"12345678")
            for _ in range(10):
                for event in await c.pump():
                    if isinstance(event, DataReceived):  # reopens the windows, as any reader does
                        c.h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id or 0)
                if not c.h2.open_outbound_streams:
                    break
        return c.events

    events = asyncio.run(run())
    assert not calmed(events) and len(statuses(events)) == CONTROL_BURST * 2


@pytest.mark.parametrize("window", [0, 65_535])
def test_a_reply_the_client_never_makes_room_for_ends_the_connection(window: int) -> None:
    async def run() -> list[Event]:
        c = client(echo, request_timeout=0.2)
        c.h2.update_settings({SettingCodes.INITIAL_WINDOW_SIZE: window})
        await c.pump()
        c.request(b"/filter", b"0123456789abcdef")  # 16,000 bytes back
        await c.pump()
        return c.events + await c.pump(0.4)

    events = asyncio.run(run())
    assert calmed(events) == (window == 0)


def test_a_client_that_reads_nothing_is_not_read_and_is_dropped_at_the_request_timeout() -> None:
    async def run() -> tuple[bool, bool, bool]:
        c = client(echo, request_timeout=0.2)
        await c.pump()
        c.server.pause_writing()  # the transport's buffer is full: the client reads nothing
        paused = not c.transport.reading
        await asyncio.sleep(0.3)
        return paused, c.transport.reading, c.transport.aborted

    assert asyncio.run(run()) == (True, False, True)


def test_a_client_that_catches_up_is_read_again_and_kept() -> None:
    async def run() -> tuple[bool, bool]:
        c = client(echo, request_timeout=0.2)
        await c.pump()
        c.server.pause_writing()
        await asyncio.sleep(0.1)
        c.server.resume_writing()
        await asyncio.sleep(0.2)
        return c.transport.reading, c.transport.aborted

    assert asyncio.run(run()) == (True, False)


@pytest.mark.parametrize(
    ("extra", "ends"),
    [
        ([(b"x-a", b"b")] * (MAX_HEADER_FIELDS - len(HEAD)), False),
        ([(b"x-a", b"b")] * (MAX_HEADER_FIELDS - len(HEAD) + 1), True),
        ([(b"x-big", b"v" * (MAX_HEADER_BYTES // 2))], False),
        ([(b"x-big", b"v" * (MAX_HEADER_BYTES + 1))], True),
    ],
    ids=["fields at the limit", "one field more", "half the bytes", "bytes over"],
)
def test_header_blocks_over_a_limit_end_the_connection(extra: list[tuple[bytes, bytes]], ends: bool) -> None:
    async def run() -> list[Event]:
        c = client(echo)
        stream = c.h2.get_next_available_stream_id()
        c.h2.send_headers(stream, [*HEAD, *extra], end_stream=True)
        return await c.pump()

    events = asyncio.run(run())
    assert calmed(events) == ends
    assert bool(statuses(events)) == (not ends)


def whole_app() -> Any:
    return create_app(EchoExtender(), registry=CollectorRegistry(), max_body_bytes=WHOLE_BYTES * 2)


@pytest.mark.parametrize(
    ("length", "body", "status"),
    [
        (b"abc", b"{}", 400),
        (b"2", b"{}{}", 400),
        (b"8", b"{}", 400),
        (b"2", b"{}", 400),  # well-formed, and answered by the verb: its body is no filter
    ],
)
def test_a_bad_content_length_is_a_400_on_its_own_stream(length: bytes, body: bytes, status: int) -> None:
    async def run() -> dict[int, int]:
        c = client(whole_app())
        bad = c.h2.get_next_available_stream_id()
        c.h2.send_headers(bad, [*HEAD, (b"content-length", length)])
        c.h2.send_data(bad, body, end_stream=True)
        good = c.request(b"/filter", b"{}")
        answers = statuses(await c.pump())
        assert answers.get(good) == 400  # served: "{}" is no filter, and the verb says so
        assert not c.transport.closed
        return {bad: answers.get(bad, 0)}

    assert list(asyncio.run(run()).values()) == [status]


def test_a_declared_body_over_the_limit_is_refused_before_it_is_sent() -> None:
    async def run() -> dict[int, int]:
        c = client(whole_app())
        stream = c.h2.get_next_available_stream_id()
        c.h2.send_headers(stream, [*HEAD, (b"content-length", b"%d" % (WHOLE_BYTES * 100))])  # and no body, ever
        return statuses(await c.pump())

    assert list(asyncio.run(run()).values()) == [413]


def test_a_budget_refills_with_time_and_credit_up_to_its_burst() -> None:
    budget = Budget(burst=2, per_second=1, now=0.0)
    assert [budget.spend(0.0) for _ in range(3)] == [True, True, False]
    assert budget.spend(1.0) and not budget.spend(1.0)
    budget.credit(10)
    assert [budget.spend(1.0) for _ in range(3)] == [True, True, False]


def test_a_quiet_log_says_one_line_per_reason_per_interval_and_how_many_it_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import logging

    now = [0.0]
    quiet = QuietLog(logging.getLogger("quiet-test"), interval=10, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="quiet-test"):
        for _ in range(5):
            quiet("a", "said %s", "x")
        quiet("b", "said %s", "y")
        now[0] = 11
        quiet("a", "said %s", "z")
    assert [r.getMessage() for r in caplog.records] == [
        "said x reason=a",
        "said y reason=b",
        "said z reason=a (and 4 more for this reason in the last 10s)",
    ]
