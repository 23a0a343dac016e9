"""HTTP/2 on a TLS listener: each request a stream of one long-lived connection, served by the same ASGI app.

Why: kube-scheduler's extender client is Go's ``net/http`` with no pool settings of its own, so it keeps at most two
idle HTTP/1.1 connections to the extender. A gang's members each hold a bind call open until the gang is complete, so
every gang opened a burst of connections whose TLS handshakes, paid in CPU by kube-scheduler and the extender alike,
ended with the gang (``bench_e2e --real`` counts them per bound pod on a real kube-scheduler v1.36; figures in
docs/bench_e2e.md), and a filter call that found no idle connection waited for a handshake on kube-scheduler's critical
path. The same client offers ``h2`` by ALPN; over HTTP/2 all its calls share one connection, however many are in flight.

Chosen during the handshake (``api.http.tls``): a client that offers ``h2`` gets this protocol, any other HTTP/1.1. The
bounds are the HTTP/1.1 protocol's (``api.http.server``): a request's headers and body must arrive within
``request_timeout`` of its first frame (a stream that does not is reset), its headers within ``MAX_HEADER_BYTES``
(``SETTINGS_MAX_HEADER_LIST_SIZE``), at most ``MAX_STREAMS`` in flight (``SETTINGS_MAX_CONCURRENT_STREAMS``),
and a connection with nothing in flight for ``keep_alive`` is closed with a GOAWAY. A body reaches the app as it
arrives and is acknowledged (its flow-control window reopened) only once the app has taken it, so a client can
never make the server hold more than a window of unread body per stream. A malformed request (RFC 9113 §8.2-8.3:
its header fields) is answered 400 naming the field and the rule, and never reaches the app; the connection's other
streams go on. An app that offers it (``WholeRequests``: the verbs) answers a request whose body arrived with its
headers directly, without ASGI.

h2 serves here as configured by ``api.http.fences.h2_fence``: every reach into h2's, hpack's and hyperframe's
internals (and uvicorn's, whose graceful shutdown drains these connections too) is fenced there, one module each.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Coroutine
from typing import Any, NamedTuple, cast
from urllib.parse import unquote

from h2.errors import ErrorCodes
from h2.events import (
    ConnectionTerminated,
    DataReceived,
    Event,
    RemoteSettingsChanged,
    RequestReceived,
    StreamEnded,
    StreamReset,
    WindowUpdated,
)
from h2.exceptions import DenialOfServiceError, H2Error
from h2.settings import SettingCodes
from starlette.types import ASGIApp, Message

from api.http.budgets import Budget, QuietLog
from api.http.fences.eager_fence import start_eagerly
from api.http.fences.h2_fence import HEADERS, RESET, server_connection
from api.http.fences.hyperframe_fence import shorten_frame_reprs
from api.http.fences.uvicorn_fence import ServerState
from api.http.header_blocks import RememberingDecoder, RememberingEncoder
from api.http.request_fields import CONNECTION_HEADERS, content_length, request_fields
from api.http.whole_requests import Reply, WholeHandler, WholeRequests

__all__ = [
    "CHURN_BURST",
    "CHURN_PER_SECOND",
    "CONTROL_BURST",
    "CONTROL_PER_SECOND",
    "ENDING_SECONDS",
    "MAX_STREAMS",
    "WHOLE_BYTES",
    "Http2Protocol",
    "ServerState",
]

log = logging.getLogger(__name__)
_quiet = QuietLog(log)  # what misbehaving clients make us say: one line per reason per interval, for all of them

MAX_STREAMS = 256
"""Requests in flight on one connection: kube-scheduler's scheduling loop and its binding goroutines, with room."""


CHURN_BURST = 4 * MAX_STREAMS
CHURN_PER_SECOND = 128.0
"""Streams a connection may end without an answer, at once and then per second: reset by the client before it was
answered, or refused by us for being over ``MAX_STREAMS``. kube-scheduler resets a call only when it gives up on it
(after its own timeout, seconds); opening and resetting streams as fast as the network allows is CVE-2023-44487."""

CONTROL_BURST = 1024
CONTROL_PER_SECOND = 128.0
CONTROL_PER_REQUEST = 1.0
CONTROL_PER_DATA_SENT = 2.0
"""Control frames (PING, SETTINGS, WINDOW_UPDATE, PRIORITY, an empty DATA frame, anything but a request's HEADERS,
CONTINUATION or DATA) a connection may send at once, then per second, plus a few for each request it makes and each
DATA frame it is sent (a reader reopens its windows for them): each costs a turn of h2 and some an answer, and a
client that sends thousands while never reading makes the server queue answers nobody takes."""

ENDING_SECONDS = 1.0
"""How long a connection ended for misbehaving may take to close before it is aborted."""

WHOLE_BYTES = 16 * 1024
"""Request body a connection holds, unacknowledged, for streams it will serve whole once their END_STREAM arrives (a
quarter of the connection's flow-control window): a client may end a stream with an empty DATA frame of its own
(Python's h2-based ones do; Go's, kube-scheduler's, sets END_STREAM on the last DATA frame)."""

_HEADS = 64
"""Header sets remembered per connection, as read by ``Http2Protocol._head`` (emptied when full)."""


class _Head(NamedTuple):
    """A well-formed request's header fields, read: what its streams are served with."""

    method: str
    path: str  # decoded, as ASGI's scope["path"]
    raw_path: bytes
    query: bytes
    headers: list[tuple[bytes, bytes]]  # with host from :authority when it had none; copied for each stream
    whole: WholeHandler | None  # the app's handler for it whole, if it has one
    length: int | None  # its content-length, if it declared one


class _Stream:
    def __init__(self, stream_id: int) -> None:
        self.id = stream_id
        self.chunks: deque[tuple[bytes, int]] = deque()  # body bytes, and their flow-controlled length
        self.ended = False  # the client sent all of its request
        self.closed = False  # reset, answered or the connection is gone: nothing more to receive or send
        self.arrived = asyncio.Event()  # a chunk, the end, or the close
        self.window = asyncio.Event()  # the client opened its flow-control window again
        self.head: _Head | None = None  # unless malformed
        self.received = 0  # body bytes, as a declared content-length counts them
        self.served = False  # handed to the app
        self.working = False  # the app's work for it has not ended (it may outlive a reset)
        self.released = False  # no longer counted against MAX_STREAMS

    def wake(self) -> None:
        self.arrived.set()
        self.window.set()


class Http2Protocol(asyncio.Protocol):
    """One HTTP/2 connection over an established (TLS) transport; ``app`` serves each of its streams."""

    def __init__(
        self,
        *,
        app: ASGIApp,
        server_state: ServerState,
        request_timeout: float,
        keep_alive: float,
        max_header_bytes: int,
    ) -> None:
        self._app = app
        self._whole = app if isinstance(app, WholeRequests) else None
        self._state = server_state
        self._request_timeout = request_timeout
        self._keep_alive = keep_alive
        shorten_frame_reprs()  # h2 renders every frame it receives, for a log nobody reads (the fence says why)
        # The headers we send are the app's, lowercased and stripped of HTTP/1.1's connection headers in ``send``:
        # h2's outbound normalising and checking of them would redo that for every response and find nothing.
        # A request's headers are checked in one pass by ``api.http.request_fields``: h2's own inbound checks are
        # chains of generators walking every byte of every value in Python, on every request
        # (``benchmarks/bench_http2.py`` measures a call's CPU; figures in docs/bench_http2.md).
        # The same few header fields both ways on every call: decoded and encoded once while HPACK's table allows.
        self._h2 = server_connection(
            settings={
                SettingCodes.MAX_CONCURRENT_STREAMS: MAX_STREAMS,
                SettingCodes.MAX_HEADER_LIST_SIZE: max_header_bytes,
            },
            decoder=RememberingDecoder,
            encoder=RememberingEncoder,
            streams_opened=2 * MAX_STREAMS,  # the protocol refuses a stream past MAX_STREAMS itself, not h2
            on_frame=self._frame,
        )
        self._streams: dict[int, _Stream] = {}
        self._busy = 0  # streams counted against MAX_STREAMS: open, or their work still running
        self._churn: Budget  # from connection_made, as the budgets below
        self._control: Budget
        self._writable = True  # the transport takes more: False while it asks us to pause
        self._stalled: asyncio.TimerHandle | None = None  # ends a connection whose client stopped reading
        self._ending: asyncio.TimerHandle | None = None  # aborts a connection we ended, should its close hang
        self._transport: asyncio.Transport | None = None
        self._loop: asyncio.AbstractEventLoop  # from connection_made
        self._client: tuple[str, int] | None = None
        self._server: tuple[str, int] | None = None
        # Two timers for the connection rather than one per request and one per idle spell: uvloop starts and stops
        # a libuv timer for each, on every call, and these seldom fire (``benchmarks/bench_http2.py``).
        self._arrivals: deque[tuple[float, _Stream]] = deque()  # streams still arriving, by deadline
        self._deadlines: asyncio.TimerHandle | None = None
        self._idle_until: float | None = None  # None: streams in flight
        self._idle: asyncio.TimerHandle | None = None
        self._idle_at = 0.0  # when _idle fires
        self._closing = False
        self._flush_pending = False
        self._heads: dict[tuple[tuple[bytes, bytes], ...], _Head | str] = {}
        self._waiting: list[_Stream] = []  # served whole once their body has arrived, unless it comes in pieces

    # --- asyncio.Protocol --------------------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._loop = asyncio.get_running_loop()  # kept: asking costs a system call each time (getpid, Python 3.11)
        self._transport = cast(asyncio.Transport, transport)
        self._client = _address(transport.get_extra_info("peername"))
        self._server = _address(transport.get_extra_info("sockname"))
        self._state.connections.add(self)
        now = self._loop.time()
        self._churn = Budget(burst=CHURN_BURST, per_second=CHURN_PER_SECOND, now=now)
        self._control = Budget(burst=CONTROL_BURST, per_second=CONTROL_PER_SECOND, now=now)
        self._h2.initiate_connection()
        self._flush()
        self._arm_idle(self._request_timeout)  # the client preface and a first request are due like a request

    def data_received(self, data: bytes) -> None:
        if self._ending is not None:
            return  # what a client sends after we ended its connection is not worth decoding
        try:
            events = self._h2.receive_data(data)
        except H2Error as err:  # h2 has queued its GOAWAY
            reason = "too_much" if isinstance(err, DenialOfServiceError) else "protocol_error"
            _quiet(reason, "ending an HTTP/2 connection client=%s error=%s", self._client, err)
            self._end()
            return
        for event in events:
            self._on(event)
        if self._waiting:
            self._serve_arrived()
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._state.connections.discard(self)
        self._disarm_idle()
        _cancel(self._idle)
        _cancel(self._deadlines)
        _cancel(self._stalled)
        _cancel(self._ending)
        self._arrivals.clear()
        self._waiting.clear()
        for stream in list(self._streams.values()):
            self._drop(stream)
        self._transport = None

    def eof_received(self) -> bool | None:
        return None  # close: a client that half-closes sends nothing more

    def pause_writing(self) -> None:
        """The client reads slower than we answer: read nothing more from it (its frames would only queue more
        answers) until it catches up, and end the connection if it has not within the request timeout."""
        if self._transport is None:
            return
        self._writable = False
        self._transport.pause_reading()
        _cancel(self._stalled)
        self._stalled = self._loop.call_later(self._request_timeout, self._write_stalled)

    def resume_writing(self) -> None:
        self._writable = True
        for stream in self._streams.values():  # replies waiting for room look again
            stream.window.set()
        _cancel(self._stalled)
        self._stalled = None
        if self._transport is not None:
            self._transport.resume_reading()

    def _write_stalled(self) -> None:
        self._stalled = None
        _quiet(
            "not_reading",
            "ending an HTTP/2 connection whose client read nothing for %gs client=%s",
            self._request_timeout,
            self._client,
        )
        if self._transport is not None:
            self._transport.abort()  # a GOAWAY would wait behind what it does not read

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown: no new streams (GOAWAY); close once those in flight are answered."""
        if self._transport is None or self._closing:
            return
        self._closing = True
        self._h2.close_connection(last_stream_id=max(self._streams, default=0))
        self._flush()
        if not self._streams:
            self._close()

    # --- frames ------------------------------------------------------------------------------------------------

    def _frame(self, kind: str, name: str) -> None:
        """Each frame received but a request's CONTINUATION and DATA, before h2 handles it: what it costs the
        client's budgets. Raises h2's ``DenialOfServiceError`` for one they do not cover; h2 then ends the connection
        with GOAWAY ``ENHANCE_YOUR_CALM``."""
        if kind == HEADERS:
            self._control.credit(CONTROL_PER_REQUEST)
        elif kind == RESET:
            if not self._churn.spend(self._loop.time()):
                raise DenialOfServiceError(f"more than {CHURN_BURST:g} streams reset at once (rapid reset)")
        elif not self._control.spend(self._loop.time()):
            raise DenialOfServiceError(f"more than {CONTROL_BURST:g} control frames at once (last: {name})")

    def _on(self, event: Event) -> None:
        if isinstance(event, RequestReceived):
            self._start(event)
        elif isinstance(event, DataReceived):
            stream = self._streams.get(event.stream_id or 0)
            if stream is not None and not stream.closed and event.data is not None:
                stream.chunks.append((event.data, event.flow_controlled_length or 0))
                stream.received += len(event.data)
                if stream.head is not None and stream.head.length is not None and stream.received > stream.head.length:
                    self._malformed(stream, f"body longer than its content-length {stream.head.length}")
                    return
                stream.arrived.set()
            elif event.stream_id:  # a stream already answered or reset: reopen the connection's window alone
                with contextlib.suppress(H2Error):
                    self._h2.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
        elif isinstance(event, StreamEnded):
            stream = self._streams.get(event.stream_id or 0)
            if stream is not None:
                stream.ended = True
                stream.arrived.set()
                if stream.closed:  # answered before its request had all arrived: now it has
                    self._drop(stream)
                elif (head := stream.head) is not None and head.length is not None and stream.received != head.length:
                    self._malformed(stream, f"body of {stream.received} bytes, not its content-length {head.length}")
        elif isinstance(event, StreamReset):
            stream = self._streams.get(event.stream_id or 0)
            if stream is not None:
                self._drop(stream)
        elif isinstance(event, WindowUpdated):
            targets = self._streams.values() if not event.stream_id else [self._streams.get(event.stream_id)]
            for stream in targets:
                if stream is not None:
                    stream.window.set()
        elif isinstance(event, RemoteSettingsChanged):
            self._settings_changed(event)
        elif isinstance(event, ConnectionTerminated):
            self._close()

    def _settings_changed(self, event: RemoteSettingsChanged) -> None:
        """The client's new SETTINGS, which h2 has applied and acknowledged. A new ``INITIAL_WINDOW_SIZE`` moves every
        open stream's send window by the difference (RFC 9113 §6.9.2) with no WINDOW_UPDATE to say so: a reply waiting
        for room (``_send_data``) is woken to look again, and one that finds the window shrunk, even below zero, waits
        for the client's next WINDOW_UPDATE. Nothing else needs us: h2 resizes our HPACK encoder for a new
        ``HEADER_TABLE_SIZE`` (``api.http.header_blocks`` then forgets what it remembered), and ``_send_data`` reads
        ``MAX_FRAME_SIZE`` for each frame."""
        if SettingCodes.INITIAL_WINDOW_SIZE in event.changed_settings:
            for stream in self._streams.values():
                stream.window.set()

    def _start(self, event: RequestReceived) -> None:
        stream_id = event.stream_id or 0
        if self._busy >= MAX_STREAMS:
            self._refuse_stream(stream_id)
            return
        fields = cast(list[tuple[bytes, bytes]], event.headers or [])
        key = tuple(fields)
        head = self._heads.get(key)
        if head is None:  # kube-scheduler sends a few header sets, over and over: each is read once
            head = self._head(fields)
            if len(self._heads) >= _HEADS:
                self._heads.clear()
            self._heads[key] = head
        stream = _Stream(stream_id)
        self._streams[stream_id] = stream
        self._busy += 1
        self._disarm_idle()
        if event.stream_ended is not None:
            stream.ended = True
        else:
            self._due(stream)
        if isinstance(head, str):
            self._malformed(stream, head)
            return
        stream.head = head
        if stream.ended and head.length:
            self._malformed(stream, f"no body, but a content-length of {head.length}")
        elif head.whole is None or (not stream.ended and head.length is not None and head.length > WHOLE_BYTES):
            self._serve_asgi(stream)  # the app reads the body as it comes, or refuses one declared too large at once
        elif stream.ended:
            self._serve_whole(stream)
        else:
            self._waiting.append(stream)

    def _refuse_stream(self, stream_id: int) -> None:
        """A stream past ``MAX_STREAMS`` (counting those whose work still runs) is refused alone (RFC 9113 §5.1.2);
        refusals spend the budget resets do, so a client cannot make opening streams free instead."""
        with contextlib.suppress(H2Error):
            self._h2.reset_stream(stream_id, error_code=ErrorCodes.REFUSED_STREAM)
        self._flush()
        if not self._churn.spend(self._loop.time()):
            self._calm("refused_streams", f"more than {CHURN_BURST:g} streams refused at once")

    def _calm(self, reason: str, detail: str) -> None:
        """End the connection with GOAWAY ``ENHANCE_YOUR_CALM``: it overspent a budget."""
        _quiet(reason, "ending an HTTP/2 connection client=%s error=%s", self._client, detail)
        if self._transport is None:
            return
        with contextlib.suppress(H2Error):
            self._h2.close_connection(error_code=ErrorCodes.ENHANCE_YOUR_CALM)
        self._end()

    def _end(self) -> None:
        """Close after a GOAWAY for a misbehaving client, and abort if that has not closed it within
        ``ENDING_SECONDS``: a TLS close waits for the client to read what is queued and to answer our close_notify,
        and a client that does neither would keep the socket, and us decrypting what it still sends."""
        if self._ending is None and self._transport is not None:
            self._ending = self._loop.call_later(ENDING_SECONDS, self._abort)
        self._close()

    def _abort(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    def _malformed(self, stream: _Stream, reason: str) -> None:
        """A 400 naming what is wrong if the app has not taken the request yet, else a reset (RFC 9113 §8.1.1)."""
        _quiet("malformed", "refusing a malformed HTTP/2 request client=%s detail=%s", self._client, reason)
        if stream.served:
            self._reset(stream, ErrorCodes.PROTOCOL_ERROR)
        else:
            self._refuse(stream, reason)

    def _head(self, fields: list[tuple[bytes, bytes]]) -> _Head | str:
        """What a request's header fields say, or why it is malformed."""
        checked = request_fields(fields)
        if isinstance(checked, str):
            return checked
        pseudo, headers = checked
        raw_path, _, query = pseudo[b":path"].partition(b"?")
        method, path = pseudo[b":method"].decode("ascii"), unquote(raw_path.decode("ascii"))
        length = content_length(headers)
        if isinstance(length, str):
            return length
        whole = self._whole.whole(method, path) if self._whole is not None else None
        return _Head(method, path, raw_path, query, headers, whole, length)

    def _serve_arrived(self) -> None:
        """After a read: serve whole the waiting streams whose request has arrived. The bodies of those still
        arriving are held unacknowledged, within ``WHOLE_BYTES`` for all of them: held longer they would close the
        connection's flow-control window to every stream, and a body larger than a window could never arrive. A
        stream that does not fit goes to ASGI, which reads its body and reopens the window as it comes."""
        waiting, self._waiting = self._waiting, []
        room = WHOLE_BYTES
        for stream in waiting:
            if stream.closed:
                continue
            if stream.ended:
                self._serve_whole(stream)
                continue
            held = sum(length for _, length in stream.chunks)
            if held > room:
                self._serve_asgi(stream)
            else:
                room -= held
                self._waiting.append(stream)

    def _serve_asgi(self, stream: _Stream) -> None:
        head = stream.head
        assert head is not None
        scope: dict[str, Any] = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "2",
            "method": head.method,
            "scheme": "https",
            "path": head.path,
            "raw_path": head.raw_path,
            "query_string": head.query,
            "root_path": "",
            "headers": list(head.headers),
            "client": self._client,
            "server": self._server,
            "state": {},
        }
        stream.served = stream.working = True
        self._track(self._loop.create_task(self._serve(stream, scope)), stream)

    def _serve_whole(self, stream: _Stream) -> None:
        head = stream.head
        assert head is not None and head.whole is not None
        chunks = stream.chunks
        body = chunks[0][0] if len(chunks) == 1 else b"".join(data for data, _ in chunks)
        self._acknowledge(stream, sum(length for _, length in chunks))  # taken by the app
        chunks.clear()
        stream.served = stream.working = True
        self._run_now(stream, self._answer_whole(stream, head.whole(body, list(head.headers)), head.path))

    def _run_now(self, stream: _Stream, answer: Coroutine[Any, Any, None]) -> None:
        """Run ``answer`` here, up to its first wait, and let a task carry it on from there if it waits at all
        (``api.http.fences.eager_fence``; the verbs never ask ``asyncio.current_task()``, None in that first step)."""
        try:
            task = start_eagerly(answer, self._loop)
        except Exception:
            log.exception("HTTP/2 stream failed stream=%d", stream.id)
            self._work_done(stream)
            if not stream.closed:
                self._reset(stream, ErrorCodes.INTERNAL_ERROR)
            return
        if task is None:
            self._work_done(stream)
        else:
            self._track(task, stream)

    def _track(self, task: asyncio.Task[None], stream: _Stream) -> None:
        self._state.tasks.add(task)
        task.add_done_callback(self._state.tasks.discard)
        task.add_done_callback(lambda _: self._work_done(stream))

    def _work_done(self, stream: _Stream) -> None:
        stream.working = False
        self._release(stream)

    def _release(self, stream: _Stream) -> None:
        """A stream stops counting against ``MAX_STREAMS`` once it is closed and its work has ended: a reset does not
        stop what the request started, so a stream reset at once still holds its place while its work runs."""
        if stream.closed and not stream.working and not stream.released:
            stream.released = True
            self._busy -= 1

    def _refuse(self, stream: _Stream, reason: str) -> None:
        """A 400 naming what is wrong, instead of the app (RFC 9113 §8.1.1 lets a server answer a malformed request
        before resetting it; a reset alone would tell the client nothing)."""
        body = f"malformed HTTP/2 request: {reason}\n".encode()
        headers = [(b":status", b"400"), (b"content-type", b"text/plain; charset=utf-8")]
        try:
            self._h2.send_headers(stream.id, [*headers, (b"content-length", b"%d" % len(body))])
            self._h2.send_data(stream.id, body, end_stream=True)  # a few hundred bytes: within any window
        except H2Error:
            self._reset(stream, ErrorCodes.PROTOCOL_ERROR)
            return
        self._flush()
        self._finish(stream)

    def _due(self, stream: _Stream) -> None:
        """``stream`` must have arrived whole within the request timeout."""
        arrivals = self._arrivals
        while arrivals and (arrivals[0][1].ended or arrivals[0][1].closed):
            arrivals.popleft()  # arrived or gone: nothing to check
        arrivals.append((self._loop.time() + self._request_timeout, stream))
        if self._deadlines is None:
            self._deadlines = self._loop.call_at(arrivals[0][0], self._check_deadlines)

    def _check_deadlines(self) -> None:
        self._deadlines = None
        arrivals = self._arrivals
        now = self._loop.time()
        while arrivals and (arrivals[0][0] <= now or arrivals[0][1].ended or arrivals[0][1].closed):
            _, stream = arrivals.popleft()
            if not stream.ended and self._streams.get(stream.id) is stream:
                self._expired(stream)
        if arrivals and self._transport is not None:
            self._deadlines = self._loop.call_at(arrivals[0][0], self._check_deadlines)

    def _expired(self, stream: _Stream) -> None:
        log.info(
            "resetting an HTTP/2 stream whose request did not arrive within %gs client=%s",
            self._request_timeout,
            self._client,
        )
        self._reset(stream, ErrorCodes.CANCEL)

    # --- one request -------------------------------------------------------------------------------------------

    async def _serve(self, stream: _Stream, scope: dict[str, Any]) -> None:
        started: dict[str, Any] = {}

        async def receive() -> Message:
            while not stream.closed:
                if stream.chunks:
                    data, length = stream.chunks.popleft()
                    self._acknowledge(stream, length)
                    more = bool(stream.chunks) or not stream.ended
                    started["read"] = not more
                    return {"type": "http.request", "body": data, "more_body": more}
                if stream.ended and not started.get("read"):
                    started["read"] = True
                    return {"type": "http.request", "body": b"", "more_body": False}
                stream.arrived.clear()
                await stream.arrived.wait()
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            if stream.closed:
                return
            if message["type"] == "http.response.start":
                started["status"] = message["status"]
                started["headers"] = list(message.get("headers", []))
                return
            if message["type"] != "http.response.body" or "status" not in started:
                return
            body = bytes(message.get("body", b""))
            more = bool(message.get("more_body", False))
            if not started.get("sent"):
                started["sent"] = True
                status = [(b":status", str(started["status"]).encode())]
                headers = [(n, bytes(v)) for n, v in ((bytes(n).lower(), v) for n, v in started["headers"])]
                headers = [(n, v) for n, v in headers if n not in CONNECTION_HEADERS]
                try:
                    self._h2.send_headers(stream.id, status + headers, end_stream=not body and not more)
                except H2Error:  # reset by the client meanwhile
                    self._drop(stream)
                    return
                self._flush()
                if not body and not more:
                    self._finish(stream)
                    return
            await self._send_data(stream, body, end=not more)

        try:
            await self._app(scope, receive, send)
        except Exception:
            log.exception("HTTP/2 request failed path=%s", scope["path"])
            if not stream.closed:
                self._reset(stream, ErrorCodes.INTERNAL_ERROR)
            return
        if not stream.closed:  # the app returned without a complete response
            self._reset(stream, ErrorCodes.INTERNAL_ERROR if not started.get("sent") else ErrorCodes.NO_ERROR)

    async def _answer_whole(self, stream: _Stream, reply: Awaitable[Reply], path: str) -> None:
        try:
            status, fields, body = await reply
        except Exception:
            log.exception("HTTP/2 request failed path=%s", path)
            if not stream.closed:
                self._reset(stream, ErrorCodes.INTERNAL_ERROR)
            return
        if stream.closed:
            return
        try:
            self._h2.send_headers(stream.id, [(b":status", b"%d" % status), *fields], end_stream=not body)
        except H2Error:  # reset by the client meanwhile
            self._drop(stream)
            return
        self._flush()
        if body:
            await self._send_data(stream, body, end=True)
        else:
            self._finish(stream)

    async def _send_data(self, stream: _Stream, body: bytes, *, end: bool) -> None:
        view = memoryview(body)
        deadline: float | None = None  # set once the reply first waits for room
        while not stream.closed:
            try:
                window = self._h2.local_flow_control_window(stream.id)
                size = min(window, self._h2.max_outbound_frame_size, len(view))
                if (size <= 0 and view) or not self._writable:
                    # A client that holds a reply's window shut, or reads nothing, would otherwise keep the stream
                    # and the reply for as long as it likes.
                    if deadline is None:
                        deadline = self._loop.time() + self._request_timeout
                    elif self._loop.time() >= deadline:
                        self._calm("reply_not_taken", f"a reply found no room for {self._request_timeout:g}s")
                        return
                    await self._room(stream, deadline)
                    continue
                last = size == len(view)
                self._h2.send_data(stream.id, bytes(view[:size]), end_stream=end and last)  # END_STREAM rides along
            except H2Error:
                self._drop(stream)
                return
            self._control.credit(CONTROL_PER_DATA_SENT)
            view = view[size:]
            self._flush()
            if last:
                break
        if end and not stream.closed:
            self._finish(stream)

    async def _room(self, stream: _Stream, deadline: float) -> None:
        """Until the client may take more of a reply (a WINDOW_UPDATE, new settings, the transport drained), the
        stream closes, or ``deadline``. A timer of its own rather than ``asyncio.timeout``: a reply's first step runs
        outside any task (``api.http.fences.eager_fence``)."""
        stream.window.clear()
        timer = self._loop.call_at(deadline, stream.window.set)
        try:
            await stream.window.wait()
        finally:
            timer.cancel()

    # --- bookkeeping -------------------------------------------------------------------------------------------

    def _acknowledge(self, stream: _Stream, length: int) -> None:
        if length and not stream.closed and self._transport is not None:
            try:
                self._h2.acknowledge_received_data(length, stream.id)
            except H2Error:
                return
            self._flush()

    def _finish(self, stream: _Stream) -> None:
        """The response is sent. The rest of a request still arriving (an early 4xx) is read and dropped until its
        end or its deadline: a reset would make some clients fail the request they were still sending."""
        if not stream.ended:
            stream.closed = True
            self._discard(stream)
            stream.wake()
            self._release(stream)
            return
        self._drop(stream)

    def _discard(self, stream: _Stream) -> None:
        """Drop what the app did not read, reopening the connection's window for it (h2 does that for a closed
        stream too): a window left shrunk would stall every later stream."""
        pending = sum(length for _, length in stream.chunks)
        stream.chunks.clear()
        if pending and self._transport is not None:
            with contextlib.suppress(H2Error):
                self._h2.acknowledge_received_data(pending, stream.id)
            self._flush()

    def _reset(self, stream: _Stream, code: ErrorCodes) -> None:
        if self._transport is not None:
            with contextlib.suppress(H2Error):  # already closed on the client's side
                self._h2.reset_stream(stream.id, error_code=code)
            self._flush()
        self._drop(stream)

    def _drop(self, stream: _Stream) -> None:
        stream.closed = True
        self._discard(stream)
        stream.wake()
        self._release(stream)
        if self._streams.pop(stream.id, None) is not None and not self._streams:
            if self._closing:
                self._close()
            else:
                self._arm_idle(self._keep_alive)

    def _arm_idle(self, seconds: float) -> None:
        """Close the connection ``seconds`` from now unless a stream starts meanwhile. The timer already running,
        if it fires no later than that, is kept: it finds the new time and waits on."""
        if self._transport is None:
            return
        loop = self._loop
        self._idle_until = until = loop.time() + seconds
        if self._idle is not None and self._idle_at > until:
            self._idle.cancel()
            self._idle = None
        if self._idle is None:
            self._idle, self._idle_at = loop.call_at(until, self._idle_expired), until

    def _disarm_idle(self) -> None:
        self._idle_until = None

    def _idle_expired(self) -> None:
        self._idle = None
        if self._transport is None or self._idle_until is None or self._streams:
            return  # busy: the next idle spell arms it again
        loop = self._loop
        if loop.time() < self._idle_until:
            self._idle, self._idle_at = loop.call_at(self._idle_until, self._idle_expired), self._idle_until
            return
        self._h2.close_connection()
        self._flush()
        self._close()

    def _flush(self) -> None:
        """Write what h2 has queued once this turn of the event loop is over: a response's HEADERS and DATA frames
        (and the WINDOW_UPDATEs for its request, and whatever other streams answered meanwhile) go out as one TLS
        record and one send. Written frame by frame they took four of each per call, and the writes were the
        largest single cost of a call on the real harness (py-spy)."""
        if not self._flush_pending and self._transport is not None:
            self._flush_pending = True
            self._loop.call_soon(self._write)

    def _write(self) -> None:
        self._flush_pending = False
        data = self._h2.data_to_send()
        if data and self._transport is not None and not self._transport.is_closing():
            self._transport.write(data)

    def _close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._write()  # a GOAWAY or a reset queued just before goes out ahead of the close
            self._transport.close()


def _cancel(handle: asyncio.TimerHandle | None) -> None:
    if handle is not None:
        handle.cancel()


def _address(value: object) -> tuple[str, int] | None:
    if isinstance(value, tuple) and len(value) >= 2:
        return str(value[0]), int(value[1])
    return None
