"""TLS on a listener: the server's context, each handshake under a deadline, the client's identity, and reloading
renewed files.

uvicorn hands its context to the event loop, which holds a handshake that never finishes for 60 s, says nothing
when one fails, and cannot look at the client's certificate before the app sees the connection. So a TLS listener
accepts plain TCP and each connection does its own handshake (``loop.start_tls``):

- **a deadline**: a client that connects and sends nothing, or half a ClientHello, is closed after
  ``handshake_timeout`` (10 s unless told otherwise), like a request that does not finish arriving;
- **the client's name**: with a client CA, the certificate must also carry one of ``client_sans`` as a DNS or URI
  subject alternative name. Any certificate the CA signed is not enough: with cert-manager, whoever may create a
  Certificate in the namespace gets one from the same CA. Checked once per connection, right after the handshake,
  so a kept-alive connection costs nothing more per request;
- **a close deadline**: once a connection is closed (a request deadline, an idle keep-alive), its TLS close, sending
  what is left and close_notify and waiting for the client's, ends within ``CLOSE_TIMEOUT``, as the loop's far
  longer default would let a client that never answers hold its socket;
- **caps**: at most ``MAX_CONNECTIONS`` connections open per listener (handshaking or handed to HTTP), of which at
  most ``MAX_PENDING_HANDSHAKES`` handshaking. A connection over either is closed at once, before any handshake work:
  clients that open connections faster than they close them, or stall handshakes by the thousand, cannot make the
  server hold sockets, tasks and TLS state without end. A connection counts until it is lost, before or after it is
  handed to HTTP (``_Counted`` sees its HTTP protocol lose it);
- **said and counted**: every failed handshake and every refused client increments
  ``grove_extender_tls_handshake_failures_total{listener, reason}`` and is logged, at most one line per reason and
  listener every ``LOG_INTERVAL`` seconds (the line says how many more there were), so a scanner cannot flood the
  log.

Only then is the connection handed to the HTTP protocol, which never sees a client that failed any of this.

Certificates are re-read when their files change (``TlsReloader``): a Secret volume that cert-manager renews swaps
the files under a running process, and the next handshake gets the new certificate. A new client CA is added to the
trusted ones (OpenSSL cannot drop one): a rotated-out CA stays trusted until restart.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from prometheus_client import CollectorRegistry, Counter

from api.http.budgets import LOG_INTERVAL, QuietLog
from api.http.fences.loop_fence import start_tls_after_plain_bytes

__all__ = [
    "CLOSE_TIMEOUT",
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "LOG_INTERVAL",
    "MAX_CONNECTIONS",
    "MAX_PENDING_HANDSHAKES",
    "HandshakeFailures",
    "HandshakeGate",
    "TlsConfig",
    "TlsError",
    "TlsReloader",
    "client_refusal",
    "server_context",
]

log = logging.getLogger(__name__)

DEFAULT_HANDSHAKE_TIMEOUT = 10.0
"""Seconds a TLS handshake may take, from the connection's first moment: kube-scheduler's own finish far sooner, so
only a client that stalls meets it."""

CLOSE_TIMEOUT = 5.0
"""Seconds a TLS connection's close may take once the server has closed it: the rest of its replies flushed, then
close_notify answered. A client that still reads and answers does so within a round trip; one that stopped reading
or never answers would otherwise hold its socket for the event loop's default, long after the deadline that closed
it."""

MAX_CONNECTIONS = 512
"""Connections one TLS listener keeps open, handshaking or handed to HTTP: kube-scheduler keeps one, over HTTP/2, so
only clients that hoard connections meet it. A client held to HTTP/1.1 opens one per call in flight, binds waiting
for their gang included: past this many at once, its next connection is refused (``busy``)."""

MAX_PENDING_HANDSHAKES = 64
"""Handshakes one TLS listener runs at once, each a task and TLS state until it ends (at the handshake deadline, for
a client that stalls): kube-scheduler handshakes once per connection it opens."""


class TlsError(RuntimeError):
    """The TLS files cannot be loaded; the message says which and why, on one line."""


@dataclass(frozen=True)
class TlsConfig:
    """PEM files: the server's certificate and key, and the CA whose client certificates are required (mTLS), with
    the names one of which such a certificate must carry (empty: any certificate the CA signed)."""

    cert: str
    key: str
    client_ca: str | None = None
    client_sans: tuple[str, ...] = ()
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT


def server_context(config: TlsConfig) -> ssl.SSLContext:
    """A server-side context (TLS 1.2 or later) with the certificate, and the client CA when there is one."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(config.cert, config.key)
        if config.client_ca:
            context.verify_mode = ssl.CERT_REQUIRED
            context.load_verify_locations(config.client_ca)
    except (OSError, ssl.SSLError) as err:
        raise TlsError(" ".join(str(err).split())) from None
    return context


def client_refusal(peercert: Any, allowed: Sequence[str]) -> str | None:
    """Why a verified client certificate is refused (it carries none of ``allowed`` as a DNS or URI SAN), or
    ``None``. ``peercert`` is ``SSLSocket.getpeercert()``'s dictionary."""
    if not allowed:
        return None
    names = [value for kind, value in (peercert or {}).get("subjectAltName", ()) if kind in ("DNS", "URI")]
    if any(name in allowed for name in names):
        return None
    carried = ", ".join(names) if names else "no DNS or URI name"
    return f"client certificate carries {carried}; expected {' or '.join(allowed)} (--client-san)"


class HandshakeFailures:
    """Counts failed handshakes and logs them, one line per reason per ``LOG_INTERVAL`` with the count in between."""

    def __init__(self, listener: str, counter: Counter, clock: Callable[[], float]) -> None:
        self._listener = listener
        self._counter = counter
        self._quiet = QuietLog(log, interval=LOG_INTERVAL, clock=clock)

    def record(self, reason: str, *, client: Any, detail: str) -> None:
        self._counter.labels(self._listener, reason).inc()
        suffix = self._quiet.admit(reason)
        if suffix is not None:
            log.warning(
                "TLS connection refused listener=%s client=%s reason=%s detail=%s%s",
                self._listener,
                _address(client),
                reason,
                detail,
                suffix,
            )


def _address(peer: Any) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)


def _failure(err: BaseException) -> tuple[str, str]:
    """(reason, detail) of a failed handshake."""
    if isinstance(err, ConnectionAbortedError):  # the loop's own abort when the deadline passes
        return "timeout", " ".join(str(err).split())
    if isinstance(err, ssl.SSLError):
        return "tls", err.reason or " ".join(str(err).split())
    return "closed", " ".join(str(err).split()) or type(err).__name__


class HandshakeGate:
    """One TLS listener's handshakes: ``connection(http)`` wraps a new connection's HTTP protocol."""

    def __init__(
        self,
        *,
        listener: str,
        config: TlsConfig,
        context: ssl.SSLContext,
        registry: CollectorRegistry,
        clock: Callable[[], float] = time.monotonic,
        alternatives: Mapping[str, Callable[[asyncio.Protocol], asyncio.Protocol]] | None = None,
        close_timeout: float = CLOSE_TIMEOUT,
        max_connections: int = MAX_CONNECTIONS,
        max_pending_handshakes: int = MAX_PENDING_HANDSHAKES,
    ) -> None:
        """``alternatives``: protocols offered by ALPN ahead of HTTP/1.1 (``{"h2": ...}``), each made from the
        HTTP/1.1 protocol the connection was accepted with when the client chooses it."""
        self.context = context
        self._config = config
        self._close_timeout = close_timeout
        self._max_connections = max_connections
        self._max_pending = max_pending_handshakes
        self._open = 0
        self._pending = 0
        self._alternatives = dict(alternatives or {})
        if self._alternatives:
            context.set_alpn_protocols([*self._alternatives, "http/1.1"])
        self.failures = HandshakeFailures(
            listener,
            Counter(
                "grove_extender_tls_handshake_failures_total",
                "TLS connections closed before reaching HTTP, by reason: timeout (no complete handshake within "
                "--tls-handshake-timeout), tls (a protocol or certificate error, e.g. no client certificate or one "
                "of another CA), client_san (a certificate of the CA without an accepted --client-san), closed "
                "(the client went away), busy (closed unread: the listener had its most connections open, or "
                "handshakes under way).",
                ["listener", "reason"],
                registry=registry,
            ),
            clock,
        )
        self._listener = listener
        self._accepted = Counter(
            "grove_extender_tls_handshakes_total",
            "TLS connections whose handshake completed and whose client was accepted, by the protocol it chose "
            "(h2, http/1.1): a client that keeps its connections makes few, one that reconnects per call one per "
            "call.",
            ["listener", "protocol"],
            registry=registry,
        )
        self._handshakes: set[asyncio.Task[None]] = set()  # the loop keeps only weak references to tasks

    def connection(self, http: asyncio.Protocol) -> asyncio.Protocol:
        return _Connection(self, http)

    @property
    def open_connections(self) -> int:
        return self._open

    @property
    def pending_handshakes(self) -> int:
        return self._pending

    def admit(self, transport: asyncio.Transport) -> bool:
        """Count a new connection in, or close it at once (``busy``) when the listener is at either cap."""
        if self._open >= self._max_connections:
            busy = f"{self._open} connections open, the most this listener keeps"
        elif self._pending >= self._max_pending:
            busy = f"{self._pending} handshakes under way, the most this listener runs at once"
        else:
            self._open += 1
            return True
        transport.abort()
        self.failures.record("busy", client=transport.get_extra_info("peername"), detail=busy)
        return False

    def released(self) -> None:
        """An admitted connection is gone (``_Connection.release``: once per connection)."""
        self._open -= 1

    def start(self, connection: _Connection, transport: asyncio.Transport) -> None:
        self._pending += 1
        task = asyncio.get_running_loop().create_task(self._handshake(connection, transport))
        self._handshakes.add(task)
        task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, connection: _Connection, transport: asyncio.Transport) -> None:
        handed_over = False
        try:
            handed_over = await self._secure(connection, transport)
        finally:
            self._pending -= 1
            if not handed_over:
                connection.release()

    async def _secure(self, connection: _Connection, transport: asyncio.Transport) -> bool:
        """Handshake, check the client and hand the connection to HTTP; whether it was handed over."""
        client = transport.get_extra_info("peername")
        connection.tls_started = True
        try:
            # The bytes read before the TLS protocol took over reach it first (api.http.fences.loop_fence: how).
            secure = await start_tls_after_plain_bytes(
                transport,
                connection,
                self.context,
                read_before=connection.take_plain_bytes,
                handshake_timeout=self._config.handshake_timeout,
                shutdown_timeout=self._close_timeout,
            )
        except Exception as err:  # whatever ends a handshake early ends only this connection
            transport.abort()
            reason, detail = _failure(err)
            self.failures.record(reason, client=client, detail=detail)
            return False
        if secure is None:  # the loop's signature allows it; start_tls on a server transport never returns None
            transport.abort()
            return False
        refusal = client_refusal(secure.get_extra_info("peercert"), self._config.client_sans)
        if refusal is not None:
            secure.abort()
            self.failures.record("client_san", client=client, detail=refusal)
            return False
        ssl_object = secure.get_extra_info("ssl_object")
        chosen = ssl_object.selected_alpn_protocol() if ssl_object is not None else None
        make = self._alternatives.get(chosen) if chosen else None
        self._accepted.labels(self._listener, chosen if make is not None else "http/1.1").inc()
        return connection.hand_over(secure, make)


class _Connection(asyncio.Protocol):
    """A connection until its handshake is done and its client accepted; then its HTTP protocol takes over.

    Two kinds of bytes can reach it on the way, and neither may be lost:
    - plain bytes (the ClientHello) read before the handshake task called ``start_tls``: uvloop starts reading
      right after ``connection_made`` whether or not the protocol paused the transport. They are handed to the TLS
      protocol ahead of anything read later (``take_plain_bytes``, ``api.http.fences.loop_fence``);
    - decrypted bytes that arrive between the end of the handshake and the hand-over (a TLS 1.3 client sends its
      request with its last handshake message). They are passed to the HTTP protocol when it takes over.
    """

    def __init__(self, gate: HandshakeGate, http: asyncio.Protocol) -> None:
        self._gate = gate
        self._http = http
        self.tls_started = False
        self._plain = bytearray()
        self._early = bytearray()
        self._eof = False
        self._lost = False
        self._admitted = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's
        self._admitted = self._gate.admit(transport)
        if not self._admitted:
            return
        transport.pause_reading()  # honoured by asyncio's loop; uvloop resumes it (see the class docstring)
        self._gate.start(self, transport)

    def release(self) -> None:
        """The connection no longer counts against its listener's cap: it is lost, or will never reach HTTP."""
        if self._admitted:
            self._admitted = False
            self._gate.released()

    def data_received(self, data: bytes) -> None:
        (self._early if self.tls_started else self._plain).extend(data)

    def take_plain_bytes(self) -> bytes:
        """The plain bytes read before ``start_tls``, for the TLS protocol that now owns the transport."""
        data, self._plain = bytes(self._plain), bytearray()
        return data

    def eof_received(self) -> bool | None:
        self._eof = True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        self.release()

    def hand_over(
        self, secure: asyncio.Transport, make: Callable[[asyncio.Protocol], asyncio.Protocol] | None = None
    ) -> bool:
        """Give the connection to its HTTP/1.1 protocol, or to the one ``make`` builds from it (ALPN's choice);
        whether it was still there to give."""
        if self._lost:
            return False
        if make is not None:
            self._http = make(self._http)
        secure.set_protocol(_Counted(self._http, self))
        self._http.connection_made(secure)
        if self._early:
            self._http.data_received(bytes(self._early))
            self._early.clear()
        if self._eof:
            self._http.eof_received()
        return True


class _Counted(asyncio.Protocol):
    """A connection's protocol once handed over: its HTTP protocol, every callback passed on as it comes, and the
    connection released from its listener's count when it is lost. The HTTP protocols are left as they are (neither
    knows of the gate), and neither hands its transport to another protocol: uvicorn's WebSocket upgrade, which would,
    is off (``api.http.server``)."""

    def __init__(self, http: asyncio.Protocol, connection: _Connection) -> None:
        self._http = http
        self._connection = connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._http.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self._http.data_received(data)

    def eof_received(self) -> bool | None:
        return self._http.eof_received()

    def pause_writing(self) -> None:
        self._http.pause_writing()

    def resume_writing(self) -> None:
        self._http.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self._http.connection_lost(exc)
        finally:
            self._connection.release()


class TlsReloader:
    """Re-reads one listener's certificate, key and client CA into its live ``SSLContext`` when the files change."""

    def __init__(self, name: str, config: TlsConfig, context: ssl.SSLContext) -> None:
        self._name = name
        self._config = config
        self._context = context
        self._seen = self._stamp()

    def _stamp(self) -> tuple[tuple[int, int, int], ...]:
        paths = [self._config.cert, self._config.key, *([self._config.client_ca] if self._config.client_ca else [])]
        stamps = []
        for path in paths:
            try:
                info = os.stat(path)  # follows the symlinks a Secret volume swaps on update
            except OSError:
                stamps.append((0, 0, 0))
            else:
                stamps.append((info.st_ino, info.st_mtime_ns, info.st_size))
        return tuple(stamps)

    def check(self) -> None:
        stamp = self._stamp()
        if stamp == self._seen:
            return
        try:
            self._context.load_cert_chain(self._config.cert, self._config.key)
            if self._config.client_ca:
                self._context.load_verify_locations(self._config.client_ca)
        except (OSError, ssl.SSLError) as err:
            # Half-written files (a key that does not match its new certificate yet): keep serving, try again.
            log.warning("could not reload TLS files listener=%s error=%s; keeping the previous ones", self._name, err)
            return
        self._seen = stamp
        log.info("reloaded TLS files listener=%s cert=%s", self._name, self._config.cert)
