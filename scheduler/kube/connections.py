"""Kept-alive HTTP/1.1 connections to the API server for the extender's writes, and a pool of them per event loop.

A request here is what the writes are: a method, a path, a small body and a handful of headers out; a status and a
body back. The response is parsed by ``httptools`` (llhttp, the parser uvicorn serves with), so nothing of HTTP's
grammar is written here: this module only frames a request, keeps connections open between requests and bounds
how long each step may take. aiohttp did the same before at more CPU per write (``benchmarks/bench_bind_client.py``
measures both; figures in docs/bench_bind_client.md), most of it in what a write needs none of (a client request
object, URL parsing, cookie and tracing hooks, a multidict of headers); the extender writes at least once per pod it
schedules, on the event loop that answers kube-scheduler.

One request at a time per connection (no pipelining: a pipelined request that fails leaves the ones behind it in
doubt). A connection goes back to the pool only after a whole response that allows keep-alive; one that failed,
timed out or was cancelled mid-request is closed, so no later request can read an earlier one's answer.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import quote, urlsplit

import httptools

__all__ = ["Answer", "ApiUnreachable", "Endpoint", "Pool"]

IDLE_SECONDS = 15.0
"""An idle connection older than this is closed rather than reused: API servers and the proxies and load balancers
in front of them drop idle connections after 60 s and more, and a request sent on one they just dropped fails."""


class ApiUnreachable(Exception):
    """No answer came from the API server: ``timed_out`` when it did not come in time, else the connection failed
    (refused, reset, TLS refused, a response that was not HTTP)."""

    def __init__(self, detail: str, *, timed_out: bool) -> None:
        super().__init__(detail)
        self.timed_out = timed_out


@dataclass(frozen=True)
class Endpoint:
    """Where the API server is, from a kubeconfig's ``server`` URL (a path after the host, as behind a proxy that
    routes by path, prefixes every request's path)."""

    host: str
    port: int
    prefix: str
    authority: str  # the Host header
    tls: ssl.SSLContext | None
    server_hostname: str | None

    @classmethod
    def of(cls, url: str, *, tls: ssl.SSLContext | bool, server_hostname: str | None = None) -> Endpoint:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"server URL {url!r}: must be http:// or https:// and name a host")
        secure = parts.scheme == "https"
        context: ssl.SSLContext | None = None
        if secure:
            if isinstance(tls, ssl.SSLContext):
                context = tls
            elif tls:
                context = ssl.create_default_context()
            else:  # the kubeconfig says not to verify
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
        return cls(
            host=parts.hostname,
            port=parts.port or (443 if secure else 80),
            prefix=parts.path.rstrip("/"),
            authority=parts.netloc.rpartition("@")[2],
            tls=context,
            server_hostname=(server_hostname or parts.hostname) if secure else None,
        )


class Answer(NamedTuple):
    status: int
    body: bytes
    retry_after: float | None  # the Retry-After field in seconds (the API server sends whole seconds), if any


def _seconds(value: bytes | None) -> float | None:
    try:
        return float(int(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: the API server does not send one


class _Connection(asyncio.Protocol):
    """One connection; ``exchange`` sends a request and waits for its whole response."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Answer] | None = None
        self._body: list[bytes] = []
        self._retry_after: bytes | None = None
        self.lost: asyncio.Future[None] = loop.create_future()
        self.closed = False
        self.reusable = False
        self.idle_since = 0.0

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as err:
            self._fail(ApiUnreachable(f"the API server's answer is not HTTP/1.1: {err}", timed_out=False))
            self.close()

    def eof_received(self) -> bool:
        return False  # the transport closes itself; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.lost.done():
            self.lost.set_result(None)
        reason = f"{type(exc).__name__}: {exc}" if exc else "the API server closed the connection"
        self._fail(ApiUnreachable(reason, timed_out=False))

    # httptools callbacks
    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) == 11 and name.lower() == b"retry-after":
            self._retry_after = value

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        waiter, self._waiter = self._waiter, None
        body, self._body = b"".join(self._body), []
        retry_after, self._retry_after = _seconds(self._retry_after), None
        self.reusable = self._parser.should_keep_alive()
        if waiter is None:  # an answer nobody asked for: the connection cannot be trusted
            self.close()
        elif not waiter.done():
            waiter.set_result(Answer(self._parser.get_status_code(), body, retry_after))

    async def exchange(self, request: bytes, *, timeout: float) -> Answer:
        if self.closed or self._transport is None or self._waiter is not None:
            raise ApiUnreachable("connection not usable", timed_out=False)
        self.reusable = False
        waiter: asyncio.Future[Answer] = self._loop.create_future()
        self._waiter = waiter
        self._transport.write(request)
        try:
            async with asyncio.timeout(timeout):
                return await waiter
        except TimeoutError:
            self.close()
            raise ApiUnreachable(f"no answer within {timeout:g}s", timed_out=True) from None
        except BaseException:
            self.close()  # cancelled mid-request: its answer must not reach the next request
            raise

    def close(self) -> None:
        self.closed = True
        self.reusable = False
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        self.close()
        if self._transport is not None:
            self._transport.abort()

    def _fail(self, error: ApiUnreachable) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)


class Pool:
    """Connections of one event loop to one endpoint: at most ``size`` at once (a caller beyond waits for one),
    idle ones reused newest first."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        size: int,
        timeout: tuple[float, float],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._endpoint = endpoint
        self._connect_timeout, self._read_timeout = timeout
        self._clock = clock
        self._slots = asyncio.Semaphore(max(1, size))
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    def head(self, method: str, path: str, *, headers: str, length: int) -> bytes:
        """A request's line and header block; ``headers``: more fields, each ending in CRLF."""
        endpoint = self._endpoint
        target = quote(endpoint.prefix + path, safe="/:?=&%-._~")
        return (
            f"{method} {target} HTTP/1.1\r\nHost: {endpoint.authority}\r\n{headers}Content-Length: {length}\r\n\r\n"
        ).encode("latin-1")

    async def request(self, head: bytes, body: bytes) -> Answer:
        """The answer to one request, or ``ApiUnreachable``."""
        async with self._slots:
            connection = self._reused() or await self._connect()
            try:
                answer = await connection.exchange(head + body, timeout=self._read_timeout)
            finally:
                self._put_back(connection)
            return answer

    async def aclose(self, *, grace: float = 1.0) -> None:
        """Close every connection and wait until each is gone: a TLS connection's close is a shutdown exchange that
        must end before its loop does. One still closing after ``grace`` seconds is aborted."""
        closing = list(self._open)
        self._open.clear()
        self._idle.clear()
        for connection in closing:
            connection.close()
        if closing:
            await asyncio.wait([c.lost for c in closing], timeout=grace)
        for connection in closing:
            if not connection.lost.done():
                connection.abort()

    def _reused(self) -> _Connection | None:
        now = self._clock()
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and now - connection.idle_since < IDLE_SECONDS:
                return connection
            self._forget(connection)
        return None

    async def _connect(self) -> _Connection:
        endpoint = self._endpoint
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, connection = await loop.create_connection(
                    lambda: _Connection(loop),
                    endpoint.host,
                    endpoint.port,
                    ssl=endpoint.tls,
                    server_hostname=endpoint.server_hostname,
                )
        except TimeoutError:
            raise ApiUnreachable(
                f"no connection to {endpoint.authority} within {self._connect_timeout:g}s", timed_out=True
            ) from None
        except (OSError, ssl.SSLError) as err:
            raise ApiUnreachable(f"cannot connect to {endpoint.authority}: {err}", timed_out=False) from None
        self._open.add(connection)
        return connection

    def _put_back(self, connection: _Connection) -> None:
        if connection.reusable and not connection.closed:
            connection.idle_since = self._clock()
            self._idle.append(connection)
        else:
            connection.close()
            self._forget(connection)

    def _forget(self, connection: _Connection) -> None:
        connection.close()
        self._open.discard(connection)
