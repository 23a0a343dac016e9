"""The bounds on a request's headers, the same over HTTP/1.1 (``api.http.server``) and HTTP/2 (``api.http.http2``):
a module of their own, so that either side imports them without importing the other; and how HTTP/1.1 counts a head's
lines before its parser reads them (``head_line_ends``)."""

from __future__ import annotations

__all__ = ["MAX_HEADER_BYTES", "MAX_HEADER_FIELDS", "head_line_ends"]

MAX_HEADER_BYTES = 64 * 1024
"""Request line plus headers: far above the few short fields kube-scheduler sends, and a bound on what a client's
headers can make the server hold."""

MAX_HEADER_FIELDS = 100
"""Header fields in one request: kube-scheduler sends a handful. Without a count, ``MAX_HEADER_BYTES`` of empty fields
would be tens of thousands the server parses and keeps, one by one, for a single request."""


def head_line_ends(data: bytes, before: bytes) -> int:
    """Line ends in ``data`` ahead of the empty line that ends a request's head (every one of them if it has none):
    the head's lines counted before any parser reads them. ``before``: the bytes that arrived just before ``data``
    (the last two are enough), where an empty line split between two reads begins.

    Never more than the head's own lines when ``data`` starts within a head, but for one: an empty line a client
    sends ahead of its request line (RFC 9112 §2.2 lets a server ignore it) is counted as a line of the head."""
    if (before.endswith(b"\n") and data.startswith((b"\n", b"\r\n"))) or (
        before.endswith(b"\n\r") and data.startswith(b"\n")
    ):
        return 0
    ends = [found for found in (data.find(b"\n\r\n"), data.find(b"\n\n")) if found >= 0]
    return data.count(b"\n", 0, min(ends) + 1 if ends else len(data))
