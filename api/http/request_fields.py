"""A request's HTTP/2 header fields checked in one pass (RFC 9113 §8.2-8.3), as h2 would check them when it validates
inbound headers: ``api.http.http2`` turns h2's own checks off and answers a malformed request 400 with the reason this
module gives, on its own stream, instead of h2 closing the whole connection."""

from __future__ import annotations

import re
from typing import cast

__all__ = ["CONNECTION_HEADERS", "content_length", "request_fields"]

CONNECTION_HEADERS = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"})
"""HTTP/1.1's connection-specific headers, which HTTP/2 forbids (RFC 9113 §8.2.2)."""


_REQUEST_PSEUDO = frozenset({b":method", b":scheme", b":path", b":authority"})  # no extended CONNECT (:protocol)
_REQUIRED_PSEUDO = (b":method", b":scheme", b":path")  # CONNECT, which omits the last two, is not served
_NAMES = re.compile(rb"[!-9;-@\[-~]+(?: [!-9;-@\[-~]+)*")
"""Field names joined by spaces: each non-empty, printable ASCII but upper case and the colon (RFC 9113 §8.2.1)."""
_CONTROL = re.compile(rb"[\0\r\n]")
_BLANK = (0x20, 0x09)  # a value may not start or end with them


def request_fields(fields: list[tuple[bytes, bytes]]) -> tuple[dict[bytes, bytes], list[tuple[bytes, bytes]]] | str:
    """The request's pseudo-header fields and its other fields (with ``host`` from ``:authority`` when it has none),
    or what makes it malformed under RFC 9113 §8.2-8.3: what h2 checks when it validates inbound headers."""
    pseudo: dict[bytes, bytes] = {}
    headers: list[tuple[bytes, bytes]] = []
    host: bytes | None = None
    for name, value in fields:
        if name[:1] == b":":
            if headers:
                return f"pseudo-header field {_show(name)} after regular fields (RFC 9113 §8.3)"
            if name not in _REQUEST_PSEUDO:
                return f"pseudo-header field {_show(name)} is not one of a request's (RFC 9113 §8.3.1)"
            if name in pseudo:
                return f"pseudo-header field {_show(name)} repeated (RFC 9113 §8.3)"
            pseudo[name] = value
            continue
        if name in CONNECTION_HEADERS or (name == b"te" and value.lower() != b"trailers"):
            return f"field {_show(name)} is connection-specific (RFC 9113 §8.2.2)"
        if name == b"host":
            if host is not None:
                return "field 'host' repeated"
            host = value
        if value and (_CONTROL.search(value) or value[0] in _BLANK or value[-1] in _BLANK):
            return f"field {_show(name)} has NUL, CR or LF in its value, or white space around it (RFC 9113 §8.2.1)"
        headers.append((name, value))
    if headers and not _NAMES.fullmatch(b" ".join(name for name, _ in headers)):
        bad = next(name for name, _ in headers if not _NAMES.fullmatch(name))
        return f"field name {_show(bad)} is empty or has upper case, a colon, a control or non-ASCII (RFC 9113 §8.2.1)"
    for name in _REQUIRED_PSEUDO:
        if not pseudo.get(name):
            return f"pseudo-header field {_show(name)} missing or empty (RFC 9113 §8.3.1)"
    if not pseudo[b":method"].isascii() or not pseudo[b":path"].isascii():
        return "':method' or ':path' is not ASCII"
    authority = pseudo.get(b":authority")
    if authority is None and host is None:
        return "neither ':authority' nor 'host' (RFC 9113 §8.3.1)"
    if authority is not None and host is not None and authority != host:
        return "':authority' and 'host' differ (RFC 9113 §8.3.1)"
    if host is None:
        headers.append((b"host", cast(bytes, authority)))
    return pseudo, headers


def content_length(headers: list[tuple[bytes, bytes]]) -> int | str | None:
    """The body's length a request declares, ``None`` if it declares none, or why its ``content-length`` is
    malformed (RFC 9110 §8.6: digits only; repeated, the same value)."""
    length: int | None = None
    for name, value in headers:
        if name != b"content-length":
            continue
        if not value.isdigit() or len(value) > 18:  # isdigit also takes non-ASCII digits: those fail int() below
            return f"field 'content-length' is not a number of bytes: {_show(value[:32])}"
        try:
            declared = int(value)
        except ValueError:
            return f"field 'content-length' is not a number of bytes: {_show(value[:32])}"
        if length is not None and declared != length:
            return "field 'content-length' repeated with another value"
        length = declared
    return length


def _show(name: bytes) -> str:
    return repr(name.decode("ascii", "backslashreplace"))
