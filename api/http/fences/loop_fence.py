"""The event loops' internals that serving relies on: how ``loop.start_tls`` takes over a connection that has
already read plain bytes, on asyncio's loop and on uvloop's.

Why: a TLS listener accepts plain TCP and does each handshake itself (``api.http.tls``), under a deadline of its own.
uvloop starts reading right after a protocol's ``connection_made`` even when that protocol paused the transport, so
the ClientHello, or part of it, may be read before ``start_tls`` is called; asyncio's loop honours the pause. Bytes
read that early must reach the TLS protocol ahead of anything read later, and neither loop has an API for that.

Relies on, in both loops' ``start_tls`` (asyncio's ``BaseEventLoop.start_tls`` and uvloop's ``Loop.start_tls``):
it swaps the transport's protocol for the loop's own TLS protocol before its first wait, then queues that protocol's
``connection_made`` and the transport's ``resume_reading`` with ``call_soon``. So a callback queued just before it
runs first, finds the TLS protocol (asyncio's private ``sslproto.SSLProtocol``, uvloop's ``SSLProtocol``) as the
transport's protocol, and can hand it the bytes through its ``BufferedProtocol`` methods (``get_buffer``,
``buffer_updated``) before its ``connection_made``: both keep them in their incoming buffer and handshake on them
once started.

Relies too on what ``start_tls``'s ``ssl_shutdown_timeout`` bounds in both loops' TLS protocols: once the connection
is closed, the whole close (flushing what is still to be sent, sending close_notify and waiting for the peer's) is
cut short after that many seconds, and the socket closed. Left unset, each loop waits its own default
(``SSL_SHUTDOWN_TIMEOUT``, 30 seconds in both), so a client that never answers close_notify holds its socket that
long after the server has closed it.

``tests/api/http/fences/test_loop.py`` runs the hand-over, and a close that the client never answers, on both loops.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable
from typing import cast

__all__ = ["start_tls_after_plain_bytes"]


async def start_tls_after_plain_bytes(
    transport: asyncio.Transport,
    protocol: asyncio.Protocol,
    context: ssl.SSLContext,
    *,
    read_before: Callable[[], bytes],
    handshake_timeout: float,
    shutdown_timeout: float,
) -> asyncio.Transport | None:
    """``loop.start_tls`` on the server side, with the plain bytes ``read_before()`` returns (those ``protocol`` read
    before this call, asked for once the loop's TLS protocol owns the transport) handed to the TLS protocol first,
    and the connection's close over within ``shutdown_timeout`` whether or not the client answers it."""
    loop = asyncio.get_running_loop()
    loop.call_soon(_hand_over, transport, protocol, read_before)  # ahead of what start_tls queues
    return await loop.start_tls(
        transport,
        protocol,
        context,
        server_side=True,
        ssl_handshake_timeout=handshake_timeout,
        ssl_shutdown_timeout=shutdown_timeout,
    )


def _hand_over(transport: asyncio.Transport, protocol: asyncio.Protocol, read_before: Callable[[], bytes]) -> None:
    data = read_before()
    tls = transport.get_protocol()
    if not data or tls is protocol:  # start_tls never took the transport over: nothing to hand
        return
    if isinstance(tls, asyncio.BufferedProtocol) or hasattr(tls, "get_buffer"):  # both loops' TLS protocols
        buffered = cast(asyncio.BufferedProtocol, tls)
        view = memoryview(data)
        while view:
            buffer = memoryview(buffered.get_buffer(len(view)))
            size = min(len(buffer), len(view))
            buffer[:size] = view[:size]
            buffered.buffer_updated(size)
            view = view[size:]
    else:
        cast(asyncio.Protocol, tls).data_received(data)
