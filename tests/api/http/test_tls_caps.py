"""``api.http.tls``'s caps on real sockets, on asyncio's loop and on uvloop's: a TLS listener at its most connections
open, or handshakes under way, closes a new connection at once, counts and logs it as ``busy``, and takes new ones
again as soon as one closes, whether it closed handshaking or after it was handed to HTTP/1.1 or HTTP/2."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
import uvloop
from prometheus_client import CollectorRegistry

from api.http.tls import HandshakeGate, TlsConfig, server_context
from scheduler.cli.certs import Authority

PATIENCE = 60.0  # for what must happen: generous, so a loaded machine never fails a test
LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


class Echo(asyncio.Protocol):
    """The HTTP protocol a connection is handed to, here: it echoes, and says when its connection is lost."""

    def __init__(self, handed: list[Echo]) -> None:
        self.handed = handed
        self.transport: asyncio.Transport | None = None
        self.lost = asyncio.Event()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.handed.append(self)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        self.transport.write(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set()


class Listener:
    """A TLS listener on loopback behind a ``HandshakeGate`` with small caps, and clients for it."""

    def __init__(self, gate: HandshakeGate, client: ssl.SSLContext, registry: CollectorRegistry) -> None:
        self.gate, self.client, self.registry = gate, client, registry
        self.handed: list[Echo] = []  # in the order their connections were handed over
        self.port = 0

    def protocol(self) -> asyncio.Protocol:
        return self.gate.connection(Echo(self.handed))

    async def silent(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection that sends nothing: its handshake stays under way (the deadline is far off)."""
        return await asyncio.open_connection("127.0.0.1", self.port)

    async def served(self, *, alpn: str = "http/1.1") -> asyncio.StreamWriter:
        """A client whose handshake completes and whose bytes reach the HTTP protocol (echoed back)."""
        context = self.client
        context.set_alpn_protocols([alpn])
        reader, writer = await asyncio.open_connection(
            "127.0.0.1", self.port, ssl=context, server_hostname="localhost", ssl_handshake_timeout=PATIENCE
        )
        writer.write(b"ping")
        assert await asyncio.wait_for(reader.readexactly(4), PATIENCE) == b"ping"
        return writer

    def handshakes(self, protocol: str) -> float:
        value = self.registry.get_sample_value(
            "grove_extender_tls_handshakes_total", {"listener": "extender", "protocol": protocol}
        )
        return value or 0.0

    def busy(self) -> float:
        value = self.registry.get_sample_value(
            "grove_extender_tls_handshake_failures_total", {"listener": "extender", "reason": "busy"}
        )
        return value or 0.0


async def closed_at_once(connection: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> bool:
    """True if the server closed the connection without a word (well before the handshake deadline)."""
    reader, writer = connection
    try:
        return await asyncio.wait_for(reader.read(), PATIENCE) == b""
    except ConnectionResetError:
        return True
    finally:
        writer.close()


async def until(condition: Callable[[], bool]) -> None:
    """Waits for what the server does on its own time (notice a close), failing only past PATIENCE."""
    deadline = asyncio.get_running_loop().time() + PATIENCE
    while not condition():
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.01)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[TlsConfig, ssl.SSLContext]:
    root = tmp_path_factory.mktemp("tls-caps")
    authority = Authority.create(days=1)
    server = authority.server(["localhost"])
    (root / "cert.pem").write_bytes(server.cert)
    (root / "key.pem").write_bytes(server.key)
    # The handshake deadline is far off: a connection closed within PATIENCE was refused, not timed out.
    config = TlsConfig(cert=str(Path(root / "cert.pem")), key=str(root / "key.pem"), handshake_timeout=4 * PATIENCE)
    return config, ssl.create_default_context(cadata=authority.pem().decode())


@contextlib.asynccontextmanager
async def listening(
    tls_files: tuple[TlsConfig, ssl.SSLContext], *, max_connections: int, max_pending_handshakes: int
) -> AsyncIterator[Listener]:
    config, client = tls_files
    registry = CollectorRegistry()
    listener = Listener(
        HandshakeGate(
            listener="extender",
            config=config,
            context=server_context(config),
            registry=registry,
            alternatives={"h2": lambda http: Echo(listener.handed)},
            max_connections=max_connections,
            max_pending_handshakes=max_pending_handshakes,
        ),
        client,
        registry,
    )
    server = await asyncio.get_running_loop().create_server(listener.protocol, "127.0.0.1", 0)
    listener.port = server.sockets[0].getsockname()[1]
    try:
        yield listener
    finally:
        server.close()


def run(loop_name: str, test: Callable[[], Awaitable[None]]) -> None:
    loop = LOOPS[loop_name]()
    try:
        loop.run_until_complete(asyncio.wait_for(test(), 4 * PATIENCE))
    finally:
        loop.close()


@pytest.mark.parametrize("loop_name", LOOPS)
def test_past_the_most_handshakes_under_way_a_connection_is_closed_at_once_until_one_ends(
    loop_name: str, tls_files: tuple[TlsConfig, ssl.SSLContext], caplog: pytest.LogCaptureFixture
) -> None:
    async def test() -> None:
        async with listening(tls_files, max_connections=10, max_pending_handshakes=2) as listener:
            stalling = [await listener.silent() for _ in range(2)]
            await until(lambda: listener.gate.pending_handshakes == 2)
            assert await closed_at_once(await listener.silent()), (
                "a connection past the most handshakes under way was kept"
            )
            assert listener.busy() == 1
            stalling[0][1].close()  # its handshake ends (the client went away): room for one more
            await until(lambda: listener.gate.pending_handshakes == 1)
            writer = await listener.served()
            assert (listener.gate.open_connections, listener.gate.pending_handshakes) == (2, 1)
            assert listener.busy() == 1
            writer.close()
            stalling[1][1].close()
            await until(lambda: listener.gate.open_connections == 0)

    with caplog.at_level(logging.WARNING, logger="api.http.tls"):
        run(loop_name, test)
    busy = [r.getMessage() for r in caplog.records if "reason=busy" in r.getMessage()]
    assert len(busy) == 1 and "2 handshakes under way, the most this listener runs at once" in busy[0], busy


@pytest.mark.parametrize("alpn", ["http/1.1", "h2"])
@pytest.mark.parametrize("loop_name", LOOPS)
def test_past_the_most_connections_a_connection_is_closed_at_once_until_one_handed_over_closes(
    loop_name: str, alpn: str, tls_files: tuple[TlsConfig, ssl.SSLContext]
) -> None:
    async def test() -> None:
        async with listening(tls_files, max_connections=1, max_pending_handshakes=5) as listener:
            first = await listener.served(alpn=alpn)
            assert await closed_at_once(await listener.silent()), "a connection past the most open was kept"
            assert listener.busy() == 1
            first.close()
            await asyncio.wait_for(listener.handed[-1].lost.wait(), PATIENCE)
            second = await listener.served(alpn=alpn)  # refused if the first still counted
            assert listener.busy() == 1 and listener.gate.open_connections == 1
            assert listener.handshakes(alpn) == 2
            second.close()
            await until(lambda: listener.gate.open_connections == 0)

    run(loop_name, test)
