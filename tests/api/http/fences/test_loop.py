"""``api.http.fences.loop_fence`` on asyncio's loop and on uvloop's: a connection that read the ClientHello as plain
bytes before ``start_tls`` hands them to the loop's TLS protocol, the handshake completes on them, and the protocol
then reads the client's decrypted bytes. If a release of either loop stops taking bytes that way, the handshake
never finishes and this fails naming the loop. And a close the client never answers (no close_notify back) ends
within ``ssl_shutdown_timeout``, not the loop's default: if a release stops bounding the close by it, this fails
naming the loop."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
import uvloop

from api.http.fences.loop_fence import start_tls_after_plain_bytes
from scheduler.cli.certs import Authority


class Reader(asyncio.Protocol):
    """Keeps what it reads: plain bytes until TLS starts, decrypted ones after."""

    def __init__(self) -> None:
        self.plain = bytearray()
        self.decrypted = bytearray()
        self.tls = False
        self.arrived = asyncio.Event()
        self.lost = asyncio.Event()

    def data_received(self, data: bytes) -> None:
        (self.decrypted if self.tls else self.plain).extend(data)
        self.arrived.set()

    def take_plain_bytes(self) -> bytes:
        data, self.plain = bytes(self.plain), bytearray()
        return data

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set()


@pytest.fixture(scope="module")
def contexts(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    root = tmp_path_factory.mktemp("loop-fence")
    authority = Authority.create(days=1)
    server = authority.server(["localhost"])
    (root / "cert.pem").write_bytes(server.cert)
    (root / "key.pem").write_bytes(server.key)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(Path(root / "cert.pem"), Path(root / "key.pem"))
    client_context = ssl.create_default_context(cadata=authority.pem().decode())
    return server_context, client_context


LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
    "asyncio": asyncio.new_event_loop,
    "uvloop": uvloop.new_event_loop,
}


async def _start_tls(
    transport: asyncio.Transport, reader: Reader, context: ssl.SSLContext, *, shutdown_timeout: float
) -> asyncio.Transport | None:
    return await asyncio.wait_for(
        start_tls_after_plain_bytes(
            transport,
            reader,
            context,
            read_before=reader.take_plain_bytes,
            handshake_timeout=5,
            shutdown_timeout=shutdown_timeout,
        ),
        10,
    )


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_client_hello_read_before_start_tls_reaches_the_loops_tls_protocol(
    loop_name: str, contexts: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server_context, client_context = contexts

    async def run() -> tuple[int, bytes, bytes]:
        ours, theirs = socket.socketpair()
        reader = Reader()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(lambda: reader, ours)
        client = asyncio.create_task(
            asyncio.open_connection(sock=theirs, ssl=client_context, server_hostname="localhost")
        )
        await asyncio.wait_for(reader.arrived.wait(), 5)  # the ClientHello, read as plain bytes
        hello = len(reader.plain)
        reader.tls = True
        try:
            secure = await _start_tls(transport, reader, server_context, shutdown_timeout=5)
        except (TimeoutError, ConnectionError, ssl.SSLError) as err:
            pytest.fail(f"{loop_name}: start_tls no longer handshakes on bytes handed to its TLS protocol first: {err}")
        assert secure is not None
        _, writer = await asyncio.wait_for(client, 5)
        reader.arrived.clear()
        writer.write(b"ping")
        await asyncio.wait_for(reader.arrived.wait(), 5)
        writer.transport.abort()
        secure.abort()
        transport.abort()
        await asyncio.sleep(0.05)  # the loop closes what was aborted
        ours.close()
        theirs.close()
        return hello, bytes(reader.decrypted), bytes(reader.plain)

    loop = LOOPS[loop_name]()
    try:
        hello, decrypted, plain_after = loop.run_until_complete(run())
    finally:
        loop.close()
    assert hello > 0  # the ClientHello was read before start_tls: the path under test was taken
    assert decrypted == b"ping" and plain_after == b""


async def _handshake_then_silence(sock: socket.socket, context: ssl.SSLContext) -> None:
    """The client's side of a handshake, by hand over ``sock``: once it is done, the client reads nothing more and
    answers nothing, not even the server's close_notify."""
    loop = asyncio.get_running_loop()
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    while True:
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            await loop.sock_sendall(sock, outgoing.read())
            incoming.write(await loop.sock_recv(sock, 65536))
        else:
            await loop.sock_sendall(sock, outgoing.read())
            return


SHUTDOWN = 0.5  # the close deadline under test, far below both loops' default


@pytest.mark.parametrize("loop_name", LOOPS)
def test_a_close_the_client_never_answers_ends_within_the_shutdown_timeout(
    loop_name: str, contexts: tuple[ssl.SSLContext, ssl.SSLContext]
) -> None:
    server_context, client_context = contexts

    async def run() -> None:
        ours, theirs = socket.socketpair()
        theirs.setblocking(False)
        reader = Reader()
        loop = asyncio.get_running_loop()
        transport, _ = await loop.connect_accepted_socket(lambda: reader, ours)
        reader.tls = True
        client = asyncio.create_task(_handshake_then_silence(theirs, client_context))
        secure = await _start_tls(transport, reader, server_context, shutdown_timeout=SHUTDOWN)
        assert secure is not None
        await asyncio.wait_for(client, 5)
        secure.close()
        try:
            await asyncio.wait_for(reader.lost.wait(), SHUTDOWN + 10)
        except TimeoutError:
            pytest.fail(f"{loop_name}: a TLS close the client never answers outlived start_tls's ssl_shutdown_timeout")
        finally:
            transport.abort()
            await asyncio.sleep(0.05)  # the loop closes what was aborted
            ours.close()
            theirs.close()

    loop = LOOPS[loop_name]()
    try:
        loop.run_until_complete(run())
    finally:
        loop.close()
