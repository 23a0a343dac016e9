"""The end-to-end harness's TCP proxy against local echo servers: it forwards both ways, a cut resets or holds what
it carries and mend brings it back, and a readiness route follows the backend that answers its probe."""

from __future__ import annotations

import http.server
import os
import socket
import socketserver
import struct
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from benchmarks.controlplane.proxy import Address, ReadinessRoute, Route, TcpProxy, to

TIMEOUT = 10.0  # every wait that should end; a broken proxy shows as this timeout, never as a hang
QUIET = 0.5  # how long "nothing arrives" is watched for

Make = Callable[[Route], TcpProxy]
Connect = Callable[[TcpProxy], socket.socket]


class Echo:
    """A TCP echo server on threads, counting the connections it got and the bytes it was sent."""

    def __init__(self) -> None:
        self.connections = 0
        self.received = 0
        self.closed = 0  # connections that ended (EOF or reset)
        lock = threading.Lock()
        echo = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with lock:
                    echo.connections += 1
                try:
                    while data := self.request.recv(1 << 16):
                        with lock:
                            echo.received += len(data)
                        self.request.sendall(data)
                except OSError:
                    pass  # the proxy reset it: what some tests do on purpose
                with lock:
                    echo.closed += 1

        self.server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.address: Address = self.server.server_address[:2]  # type: ignore[assignment]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Probe:
    """An HTTP readiness endpoint: 200 while ``ready``, 503 otherwise."""

    def __init__(self, *, ready: bool) -> None:
        self.ready = ready
        probe = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200 if probe.ready else 503)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/readyz"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def echo() -> Iterator[Echo]:
    server = Echo()
    yield server
    server.stop()


@pytest.fixture
def proxy() -> Iterator[Make]:
    started: list[TcpProxy] = []

    def make(route: Route) -> TcpProxy:
        started.append(TcpProxy(route=route).start())
        return started[-1]

    yield make
    for each in started:
        each.stop()


@pytest.fixture
def sockets() -> Iterator[Connect]:
    opened: list[socket.socket] = []

    def connect(through: TcpProxy) -> socket.socket:
        opened.append(socket.create_connection(("127.0.0.1", through.port), timeout=TIMEOUT))
        return opened[-1]

    yield connect
    for each in opened:
        each.close()


def receive(sock: socket.socket, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = sock.recv(min(size - got, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def round_trip(sock: socket.socket, data: bytes = b"ping") -> bytes:
    sock.sendall(data)
    return receive(sock, len(data))


def assert_reset(sock: socket.socket) -> None:
    """The proxy closed ``sock`` with a RST (SO_LINGER 0), not an orderly FIN and not by holding it open."""
    with pytest.raises(ConnectionResetError):
        sock.recv(1)


def assert_turned_away(through: TcpProxy) -> None:
    """A new connection is reset at once: on the first read, or already as the connect completes (the proxy accepts
    and resets it before the client's connect has looked)."""
    with pytest.raises(ConnectionResetError), socket.create_connection(("127.0.0.1", through.port), TIMEOUT) as sock:
        sock.recv(1)


def assert_quiet(sock: socket.socket) -> None:
    sock.settimeout(QUIET)
    with pytest.raises(TimeoutError):
        sock.recv(1)
    sock.settimeout(TIMEOUT)


def eventually(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_bytes_go_both_ways_and_a_half_close_passes_on(echo: Echo, proxy: Make, sockets: Connect) -> None:
    through = proxy(to(*echo.address))
    client = sockets(through)
    assert round_trip(client) == b"ping"
    # 5 MB the echo sends back while it is still being sent: both directions at once, each held by the other's
    # backpressure. Random bytes, so a reordered or dropped chunk shows.
    payload = os.urandom(5 * 2**20)

    def send() -> None:
        client.sendall(payload)
        client.shutdown(socket.SHUT_WR)  # the echo sees EOF and closes; its FIN must come back through the proxy

    sender = threading.Thread(target=send)
    sender.start()
    assert receive(client, len(payload) + 1) == payload  # the +1: ends only on the echo's close
    sender.join(TIMEOUT)
    assert (echo.connections, echo.received) == (1, len(payload) + 4)
    assert through.accepted == 1
    eventually(lambda: through.connections == 0)


def test_a_cut_resets_open_and_new_connections_until_mended(echo: Echo, proxy: Make, sockets: Connect) -> None:
    through = proxy(to(*echo.address))
    before = sockets(through)
    assert round_trip(before) == b"ping"
    assert through.connections == 1

    through.cut()
    assert through.connections == 0
    assert_reset(before)
    assert_turned_away(through)  # accepted, so the port stays the proxy's, and reset
    assert echo.connections == 1  # the one during the cut never reached the backend

    through.mend()
    after = sockets(through)
    assert round_trip(after, b"again") == b"again"
    assert (echo.connections, through.accepted) == (2, 3)


def test_a_blackhole_holds_connections_and_forwards_nothing_until_mended(
    echo: Echo, proxy: Make, sockets: Connect
) -> None:
    through = proxy(to(*echo.address))
    before = sockets(through)
    assert round_trip(before, b"one") == b"one"

    through.cut(mode="blackhole")
    before.sendall(b"two")
    during = sockets(through)
    during.sendall(b"new")
    assert_quiet(before)
    assert_quiet(during)
    assert (echo.connections, echo.received) == (1, 3)  # nothing reached the backend, not even the new connection
    assert through.connections == 2  # both held open

    through.mend()
    assert receive(before, 3) == b"two"  # held, not lost
    assert receive(during, 3) == b"new"
    assert round_trip(before, b"three") == b"three"
    assert echo.connections == 2


@pytest.mark.parametrize("abort", [False, True], ids=["fin", "rst"])
def test_a_close_during_a_blackhole_reaches_no_one_until_mended(
    echo: Echo, proxy: Make, sockets: Connect, abort: bool
) -> None:
    through = proxy(to(*echo.address))
    client = sockets(through)
    assert round_trip(client) == b"ping"
    through.cut(mode="blackhole")
    if abort:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()
    time.sleep(QUIET)
    assert echo.closed == 0  # the client's close is held too
    assert through.connections == 1
    through.mend()
    eventually(lambda: echo.closed == 1)
    eventually(lambda: through.connections == 0)


def test_blackhole_then_reset_then_mend_makes_every_client_reconnect(echo: Echo, proxy: Make, sockets: Connect) -> None:
    through = proxy(to(*echo.address))
    client = sockets(through)
    assert round_trip(client) == b"ping"
    through.cut(mode="blackhole")
    held = sockets(through)
    through.cut(mode="reset")
    assert_reset(client)
    assert_reset(held)
    through.mend()
    assert round_trip(sockets(through)) == b"ping"


def test_no_route_or_a_dead_backend_resets_the_connection(proxy: Make, sockets: Connect) -> None:
    nowhere = proxy(lambda: None)
    assert_turned_away(nowhere)
    assert (nowhere.accepted, nowhere.connections) == (1, 0)

    refused = proxy(to("127.0.0.1", free_port()))
    assert_turned_away(refused)

    def broken() -> Address:
        raise RuntimeError("no route")

    assert_turned_away(proxy(broken))


def test_a_given_port_is_bound_and_stop_closes_it(echo: Echo, sockets: Connect) -> None:
    port = free_port()
    with TcpProxy(route=to(*echo.address), port=port) as through:
        assert through.port == port
        client = sockets(through)
        assert round_trip(client) == b"ping"
    assert_reset(client)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT).close()


def test_a_readiness_route_follows_the_ready_backend(proxy: Make, sockets: Connect) -> None:
    a, b = Echo(), Echo()
    probe_a, probe_b = Probe(ready=True), Probe(ready=False)
    route = ReadinessRoute([(a.address, probe_a.url), (b.address, probe_b.url)], interval=0.05).start()
    try:
        assert route.ready == [a.address]  # start() probed once already
        through = proxy(route)
        first = sockets(through)
        assert round_trip(first) == b"ping"
        assert (a.connections, b.connections) == (1, 0)

        probe_a.ready, probe_b.ready = False, True
        eventually(lambda: route.ready == [b.address])
        second = sockets(through)
        assert round_trip(second) == b"ping"
        assert (a.connections, b.connections) == (1, 1)
        assert round_trip(first, b"still") == b"still"  # an open connection stays on its backend
        assert a.received == len(b"pingstill")

        probe_b.ready = False
        eventually(lambda: route.ready == [])
        assert_turned_away(through)
        assert (a.connections, b.connections) == (1, 1)
    finally:
        route.stop()
        for server in (a, b, probe_a, probe_b):
            server.stop()


def test_a_readiness_route_takes_ready_backends_in_turn_and_counts_silence_as_unready() -> None:
    one, two = Probe(ready=True), Probe(ready=True)
    gone = f"http://127.0.0.1:{free_port()}/readyz"
    try:
        with ReadinessRoute([(("h", 1), one.url), (("h", 2), gone), (("h", 3), two.url)], interval=60) as route:
            assert {route(), route()} == {("h", 1), ("h", 3)}
            one.ready = False
            route.poll()
            assert [route(), route()] == [("h", 3), ("h", 3)]
    finally:
        one.stop()
        two.stop()
