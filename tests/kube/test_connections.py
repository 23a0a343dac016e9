"""The writes' kept-alive connections against a real socket server whose answers each test scripts: reuse, what
ends a connection's reuse (the server's ``Connection: close``, its hang-up, age, a failure or a cancellation), the
pool's bound, and answers that are not HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import pytest

from scheduler.kube.connections import IDLE_SECONDS, ApiUnreachable, Endpoint, Pool

Answer = Callable[[bytes], bytes | None]  # the request's head → the bytes to send back (None: hang up)


def ok(body: bytes = b"{}", *, close: bool = False) -> bytes:
    extra = b"Connection: close\r\n" if close else b""
    return b"HTTP/1.1 201 Created\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), extra, body)


@dataclass
class Server:
    port: int = 0
    connections: int = 0
    open_now: int = 0
    most_open: int = 0
    heads: list[bytes] = field(default_factory=list)
    writers: list[asyncio.StreamWriter] = field(default_factory=list)


@asynccontextmanager
async def serving(answer: Answer, *, delay: float = 0.0) -> AsyncIterator[Server]:
    server = Server()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        server.open_now += 1
        server.most_open = max(server.most_open, server.open_now)
        server.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":")[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    ),
                    0,
                )
                await reader.readexactly(length)
                server.heads.append(head)
                await asyncio.sleep(delay)
                reply = answer(head)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if b"Connection: close" in reply:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            server.open_now -= 1
            writer.close()

    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    try:
        yield server
    finally:
        listener.close()
        for writer in server.writers:
            writer.close()


def pool_for(server: Server, *, size: int = 4, read: float = 2.0, clock: Callable[[], float] | None = None) -> Pool:
    endpoint = Endpoint.of(f"http://127.0.0.1:{server.port}/prefix/", tls=False)
    if clock is None:
        return Pool(endpoint, size=size, timeout=(2.0, read))
    return Pool(endpoint, size=size, timeout=(2.0, read), clock=clock)


async def post(pool: Pool, path: str = "/api/v1/x", body: bytes = b'{"a": 1}') -> tuple[int, bytes]:
    answer = await pool.request(pool.head("POST", path, headers="X-Test: 1\r\n", length=len(body)), body)
    return answer.status, answer.body


def test_a_kept_alive_connection_carries_the_next_request() -> None:
    async def run() -> None:
        async with serving(lambda head: ok(b'{"n": 1}')) as server:
            pool = pool_for(server)
            assert await post(pool) == (201, b'{"n": 1}')
            assert await post(pool) == (201, b'{"n": 1}')
            await pool.aclose()
        assert server.connections == 1
        head = server.heads[0]
        assert head.startswith(b"POST /prefix/api/v1/x HTTP/1.1\r\n")  # the server URL's path prefixes the path
        assert f"Host: 127.0.0.1:{server.port}\r\n".encode() in head and b"X-Test: 1\r\n" in head
        assert b"Content-Length: 8\r\n" in head

    asyncio.run(run())


def test_a_chunked_answer_is_read_whole() -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"

    async def run() -> None:
        async with serving(lambda head: chunked) as server:
            pool = pool_for(server)
            assert await post(pool) == (200, b"abcde")
            assert await post(pool) == (200, b"abcde")
            await pool.aclose()
        assert server.connections == 1

    asyncio.run(run())


def test_connection_close_and_a_hang_up_end_reuse_without_failing_the_next_request() -> None:
    answers = iter([ok(close=True), ok(), None, ok()])

    async def run() -> None:
        async with serving(lambda head: next(answers)) as server:
            pool = pool_for(server)
            assert (await post(pool))[0] == 201  # answered, then closed by the server: not reused
            assert (await post(pool))[0] == 201  # a new connection
            with pytest.raises(ApiUnreachable, match="closed the connection") as hung_up:
                await post(pool)  # the server hangs up instead of answering
            assert not hung_up.value.timed_out
            assert (await post(pool))[0] == 201
            await pool.aclose()
        assert server.connections == 3

    asyncio.run(run())


def test_an_idle_connection_closed_by_the_server_is_not_reused() -> None:
    async def run() -> None:
        async with serving(lambda head: ok()) as server:
            pool = pool_for(server)
            await post(pool)
            server.writers[0].close()  # the server drops the idle connection
            await asyncio.sleep(0.05)
            assert (await post(pool))[0] == 201
            await pool.aclose()
        assert server.connections == 2

    asyncio.run(run())


def test_a_connection_idle_too_long_is_replaced() -> None:
    now = [0.0]

    async def run() -> None:
        async with serving(lambda head: ok()) as server:
            pool = pool_for(server, clock=lambda: now[0])
            await post(pool)
            now[0] = IDLE_SECONDS - 1
            await post(pool)
            now[0] += IDLE_SECONDS + 1
            await post(pool)
            await pool.aclose()
        assert server.connections == 2

    asyncio.run(run())


def test_a_late_answer_is_a_timeout_and_never_reaches_the_next_request() -> None:
    bodies = iter([b'"first"', b'"second"'])

    async def run() -> None:
        async with serving(lambda head: ok(next(bodies)), delay=0.3) as server:
            pool = pool_for(server, read=0.1)
            with pytest.raises(ApiUnreachable, match=r"no answer within 0.1s") as late:
                await post(pool)
            assert late.value.timed_out
            slow = pool_for(server, read=2.0)
            assert await post(slow) == (201, b'"second"')  # on a new connection: the first's answer is gone
            await pool.aclose()
            await slow.aclose()
        assert server.connections == 2

    asyncio.run(run())


def test_a_cancelled_request_closes_its_connection() -> None:
    async def run() -> None:
        async with serving(lambda head: ok(b'"late"'), delay=0.2) as server:
            pool = pool_for(server)
            task = asyncio.create_task(post(pool))
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert (await post(pool))[0] == 201
            await pool.aclose()
        assert server.connections == 2

    asyncio.run(run())


def test_the_pool_holds_at_most_its_size_of_connections() -> None:
    async def run() -> None:
        async with serving(lambda head: ok(), delay=0.05) as server:
            pool = pool_for(server, size=2)
            answers = await asyncio.gather(*(post(pool) for _ in range(8)))
            await pool.aclose()
        assert [status for status, _ in answers] == [201] * 8
        assert server.most_open == 2 and server.connections == 2

    asyncio.run(run())


def test_an_answer_that_is_not_http_is_named() -> None:
    async def run() -> None:
        async with serving(lambda head: b"SSH-2.0-OpenSSH_9.6\r\n") as server:
            pool = pool_for(server)
            with pytest.raises(ApiUnreachable, match=r"not HTTP/1\.1") as garbage:
                await post(pool)
            assert not garbage.value.timed_out
            await pool.aclose()

    asyncio.run(run())


def test_nobody_listening_is_unanswered_not_timed_out() -> None:
    async def run() -> None:
        async with serving(lambda head: ok()) as server:
            port = server.port
        pool = Pool(Endpoint.of(f"http://127.0.0.1:{port}", tls=False), size=1, timeout=(1.0, 1.0))
        with pytest.raises(ApiUnreachable, match="cannot connect") as refused:
            await post(pool)
        assert not refused.value.timed_out

    asyncio.run(run())


@pytest.mark.parametrize("url", ["ftp://example.com", "https://", "example.com:6443"])
def test_a_server_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match=r"must be http:// or https://"):
        Endpoint.of(url, tls=True)


def test_an_https_endpoint_checks_the_name_it_is_told() -> None:
    endpoint = Endpoint.of("https://10.0.0.1:6443", tls=True, server_hostname="kubernetes")
    assert (endpoint.host, endpoint.port, endpoint.server_hostname, endpoint.authority) == (
        "10.0.0.1",
        6443,
        "kubernetes",
        "10.0.0.1:6443",
    )
    assert endpoint.tls is not None and endpoint.tls.check_hostname
    unverified = Endpoint.of("https://[::1]", tls=False)
    assert (unverified.host, unverified.port, unverified.authority) == ("::1", 443, "[::1]")
    assert unverified.tls is not None and not unverified.tls.check_hostname
