"""What an app offers a protocol that can hand it a request whole: ``api.http.http2`` serves the verbs so, without
ASGI, when their body arrived with their headers; ``api.http.verbs`` and ``api.http.app`` implement it."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol, runtime_checkable

__all__ = ["Reply", "WholeHandler", "WholeRequests"]

Reply = tuple[int, list[tuple[bytes, bytes]], bytes]
"""A response as a whole: its status, its header fields (names in lower case, none of HTTP/1.1's connection-specific
ones) and its body."""

WholeHandler = Callable[[bytes, list[tuple[bytes, bytes]]], Coroutine[Any, Any, Reply]]
"""Answers a request from its whole body and its header fields."""


@runtime_checkable
class WholeRequests(Protocol):
    """An app that answers some requests itself once their body has arrived whole, without ASGI.

    kube-scheduler's calls are small bodies that arrive with their headers: for them the ASGI messages, the
    ``receive`` and ``send`` closures and the middleware around the app are CPU spent on every call that does
    nothing for it (``benchmarks/bench_http2.py`` measures a call's CPU; figures in docs/bench_http2.md). A request
    whose body arrives in pieces still goes through ASGI, which reads it as it comes.
    """

    def whole(self, method: str, path: str) -> WholeHandler | None:
        """The handler for ``method`` on ``path`` (decoded as in ASGI's ``scope["path"]``), or ``None``: ASGI.
        Asked once per connection for each set of header fields it sees: the answer must not change."""
        ...
