"""A bare HTTP/1.1 keep-alive client over asyncio streams, and a pool of them.

kube-scheduler's Go client costs microseconds per call; httpx costs about a millisecond on these machines, which
would measure the client instead of the server. Bodies are bytes in and (status, bytes) out.
"""

from __future__ import annotations

import asyncio
import ssl

__all__ = ["Connection", "Pool"]

TIMEOUT_SECONDS = 60.0


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self._reader = reader
        self._writer = writer
        self._host = host

    @classmethod
    async def open(cls, host: str, port: int, *, tls: ssl.SSLContext | None = None) -> Connection:
        """``tls``: a client context (with the client certificate) for a server behind mTLS; its certificate is
        checked for ``localhost``."""
        server_hostname = "localhost" if tls else None
        reader, writer = await asyncio.open_connection(host, port, ssl=tls, server_hostname=server_hostname)
        return cls(reader, writer, f"{host}:{port}")

    async def request(
        self, method: str, path: str, body: bytes = b"", *, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        extra = "".join(f"{name}: {value}\r\n" for name, value in (headers or {}).items())
        head = f"{method} {path} HTTP/1.1\r\nHost: {self._host}\r\nContent-Type: application/json\r\n{extra}"
        self._writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        status_line = await asyncio.wait_for(self._reader.readline(), timeout=TIMEOUT_SECONDS)
        if not status_line:
            raise ConnectionError(f"{self._host} closed the connection")
        length = 0
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await self._reader.readexactly(length)
        return int(status_line.split(b" ", 2)[1]), payload

    def close(self) -> None:
        self._writer.close()


class Pool:
    """Connections to one server, reused: concurrent calls each take an idle one or open another, up to
    ``limit`` at once (None: no limit, as Go's HTTP/1.1 transport to an extender; kube-scheduler's calls to the
    API server share one HTTP/2 connection, which a small limit stands in for)."""

    def __init__(self, host: str, port: int, *, limit: int | None = None) -> None:
        self._host = host
        self._port = port
        self._idle: list[Connection] = []
        self._slots = asyncio.Semaphore(limit) if limit else None

    async def request(
        self, method: str, path: str, body: bytes = b"", *, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        if self._slots is None:
            return await self._request(method, path, body, headers)
        async with self._slots:
            return await self._request(method, path, body, headers)

    async def _request(self, method: str, path: str, body: bytes, headers: dict[str, str] | None) -> tuple[int, bytes]:
        connection = self._idle.pop() if self._idle else await Connection.open(self._host, self._port)
        try:
            answer = await connection.request(method, path, body, headers=headers)
        except BaseException:
            connection.close()
            raise
        self._idle.append(connection)
        return answer

    def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()
