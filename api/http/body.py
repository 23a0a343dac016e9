"""Reading and decoding a request body within bounds: its size, the event loop's time, and the client's patience.

kube-scheduler sends every call with a ``Content-Length``; in node-names mode (``nodeCacheCapable: true``) a filter
is the Pod plus a list of names, a few KB for thousands of nodes. A body over the limit is refused before it is read.
A large body is decoded in a worker thread, one at a time: decoding is pure CPU, and on the event loop every other
call would wait while a large cluster's NodeList decodes (figures in docs/README.md, under NodeList mode), while
several at once would hold several copies of a cluster in memory.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.types import Receive, Scope

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "OFF_LOOP_BYTES",
    "BadRequest",
    "BodyDecoder",
    "ClientGone",
    "describe_validation",
]

DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
"""Node-names mode with room to spare: a Pod (at most ~1.5 MB, etcd's object limit) and ~50,000 node names.
NodeList mode (``nodeCacheCapable: false``) sends every node in full, a few KB each: raise ``--max-body-bytes``."""

OFF_LOOP_BYTES = 256 * 1024
"""Bodies above this are decoded in a worker thread. Below it, node-names filters for thousands of nodes decode on
the event loop: for a body that small the hand-off to a thread and back would cost more than it saves
(``python -m benchmarks.bench_http`` measures a filter's decode; figures in docs/bench_http.md)."""

ModelT = TypeVar("ModelT", bound=BaseModel)


class BadRequest(Exception):
    """A body the extender will not act on; ``status`` is the HTTP status, ``message`` names the field and rule."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ClientGone(Exception):
    """The client closed the connection before its body arrived (an aborted upload, or a slow-client deadline)."""


def describe_validation(error: ValidationError) -> str:
    parts = []
    for detail in error.errors()[:3]:
        where = ".".join(str(part) for part in detail["loc"]) or "body"
        parts.append(f"{where}: {detail['msg']}")
    more = error.error_count() - len(parts)
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


def _validate(model: type[ModelT], body: bytes, verb: str) -> ModelT:
    if not body:
        raise BadRequest(400, f"{verb}: empty body; expected a JSON object")
    try:
        return model.model_validate_json(body)
    except ValidationError as err:
        raise BadRequest(400, f"{verb}: {describe_validation(err)}") from None
    except RecursionError:
        # pydantic refuses deep nesting itself; this is the guard for whatever slips past it.
        raise BadRequest(400, f"{verb}: JSON nested too deeply") from None


class BodyDecoder:
    """Reads and decodes bodies for one app: the size limit, and the one-at-a-time gate for large bodies."""

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BODY_BYTES, off_loop_bytes: int = OFF_LOOP_BYTES) -> None:
        self.max_bytes = max_bytes
        self.off_loop_bytes = off_loop_bytes
        self._large = asyncio.Semaphore(1)

    async def read(self, scope: Scope, receive: Receive) -> bytes:
        """The request's whole body from ASGI ``receive``; ``BadRequest`` (413) as soon as it is known to be too
        large (from ``Content-Length``, before reading any of it), ``ClientGone`` if the client disconnects."""
        self.check_declared(scope["headers"])
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone()
            chunk = message.get("body", b"")
            size += len(chunk)
            self.check_size(size)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def check_declared(self, headers: Iterable[tuple[bytes, bytes]]) -> None:
        """``BadRequest`` (413) if the request's ``Content-Length`` says its body is too large."""
        for name, value in headers:
            if name == b"content-length" and value.isdigit() and int(value) > self.max_bytes:
                declared = value.decode()
                raise BadRequest(413, f"body of {declared} bytes exceeds the limit of {self.max_bytes} bytes")

    def check_size(self, size: int) -> None:
        """``BadRequest`` (413) if ``size`` bytes of body, arrived so far, are too many."""
        if size > self.max_bytes:
            raise BadRequest(413, f"body exceeds the limit of {self.max_bytes} bytes")

    async def decode(self, model: type[ModelT], body: bytes, verb: str) -> ModelT:
        """The body as ``model``; raises ``BadRequest`` naming the field for anything that does not validate."""
        if len(body) <= self.off_loop_bytes:
            return _validate(model, body, verb)
        async with self._large:
            return await asyncio.to_thread(_validate, model, body, verb)
