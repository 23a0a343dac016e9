"""A small client of the Kubernetes REST API for the harness and the tests: JSON in and out, a bearer token, the
API server verified against its CA. ``Api`` is the blocking face (one private event loop on a daemon thread);
``many`` runs thousands of calls concurrently on that loop, which is how 1,000 nodes are created in seconds."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import ssl
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlencode

import aiohttp

__all__ = ["Api", "ApiError", "Reply"]

T = TypeVar("T")
MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"


@dataclass(frozen=True)
class Reply:
    status: int
    body: Any  # decoded JSON (a v1.Status for errors), or the text when it is not JSON


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, reply: Reply) -> None:
        message = reply.body.get("message", reply.body) if isinstance(reply.body, dict) else reply.body
        super().__init__(f"{method} {path}: HTTP {reply.status}: {message}")
        self.reply = reply


class Api:
    """``server`` (https://127.0.0.1:port) as the holder of ``token``."""

    def __init__(self, server: str, *, token: str, ca: Path, concurrency: int = 32) -> None:
        self.server = server.rstrip("/")
        self.token = token
        self.ca = ca
        self._ssl = ssl.create_default_context(cafile=str(ca))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="e2e-api", daemon=True)
        self._thread.start()
        self._session: aiohttp.ClientSession | None = None
        self._limit = asyncio.Semaphore(concurrency)

    # --- the loop -------------------------------------------------------------------------------------------------

    def run(self, coroutine: Awaitable[T], *, timeout: float | None = 600) -> T:
        async def wrapped() -> T:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop).result(timeout)

    def background(self, coroutine: Awaitable[T]) -> concurrent.futures.Future[T]:
        """Run ``coroutine`` on the client's loop without waiting for it (cancel the future to stop it)."""

        async def wrapped() -> T:
            return await coroutine

        return asyncio.run_coroutine_threadsafe(wrapped(), self._loop)

    def many(self, calls: Iterable[Callable[[], Awaitable[T]]]) -> list[T]:
        """Run every call concurrently (``concurrency`` at a time); their results in order."""

        async def all_of() -> list[T]:
            return list(await asyncio.gather(*(call() for call in calls)))

        return self.run(all_of(), timeout=None)

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self.run(self._shutdown(), timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()

    async def _shutdown(self) -> None:
        """Stop what still runs on the loop (a watch nobody cancelled), close the session, then let the loop turn
        a little longer: aiohttp closes an SSL transport without waiting for its shutdown to finish (aiohttp#1925),
        so stopping the loop at once leaves sockets that warn when collected, and under ``-W error`` the session's
        end then fails ``make e2e`` after every scenario passed."""
        running = asyncio.all_tasks() - {asyncio.current_task()}
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
        await asyncio.sleep(0.25)

    # --- requests (async, on the loop) ------------------------------------------------------------------------------

    async def _open(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(ssl=self._ssl, limit=64),
                headers={"Authorization": f"Bearer {self.token}"},
                timeout=aiohttp.ClientTimeout(total=120),
            )
        return self._session

    async def arequest(
        self, method: str, path: str, body: Any = None, *, content_type: str = "application/json", **query: Any
    ) -> Reply:
        session = await self._open()
        url = self.server + path + (f"?{urlencode(query)}" if query else "")
        data = None if body is None else json.dumps(body).encode()
        async with self._limit, session.request(method, url, data=data, headers={"Content-Type": content_type}) as r:
            text = await r.text()
        try:
            decoded = json.loads(text) if text else None
        except json.JSONDecodeError:
            decoded = text
        return Reply(r.status, decoded)

    async def acall(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        """The decoded body; ``ApiError`` for any status from 400 up."""
        reply = await self.arequest(method, path, body, **kwargs)
        if reply.status >= 400:
            raise ApiError(method, path, reply)
        return reply.body

    async def watch(self, path: str, *, resource_version: str, **query: Any) -> AsyncIterator[dict[str, Any]]:
        """The watch events of ``path`` from ``resource_version`` until the server ends the stream."""
        session = await self._open()
        params = {"watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "true", **query}
        url = f"{self.server}{path}?{urlencode(params)}"
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=None, sock_read=None)) as response:
            if response.status != 200:
                raise ApiError("WATCH", path, Reply(response.status, await response.text()))
            async for line in response.content:
                if line.strip():
                    yield json.loads(line)

    # --- blocking face ---------------------------------------------------------------------------------------------

    def request(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Reply:
        return self.run(self.arequest(method, path, body, **kwargs))

    def call(self, method: str, path: str, body: Any = None, **kwargs: Any) -> Any:
        return self.run(self.acall(method, path, body, **kwargs))

    def get(self, path: str, **query: Any) -> Any:
        return self.call("GET", path, **query)

    def find(self, path: str) -> Any | None:
        """The object at ``path``, or None when it does not exist."""
        reply = self.request("GET", path)
        if reply.status == 404:
            return None
        if reply.status >= 400:
            raise ApiError("GET", path, reply)
        return reply.body

    def items(self, path: str, **query: Any) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.get(path, **query)["items"]
        return found

    def create(self, path: str, body: Any) -> Any:
        return self.call("POST", path, body)

    def merge(self, path: str, body: Any) -> Any:
        return self.call("PATCH", path, body, content_type=MERGE)

    def delete(self, path: str, **query: Any) -> Reply:
        """DELETE; a 404 is not an error (the object is gone either way)."""
        reply = self.request("DELETE", path, **query)
        if reply.status >= 400 and reply.status != 404:
            raise ApiError("DELETE", path, reply)
        return reply
