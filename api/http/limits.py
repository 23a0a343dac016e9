"""What one request's header section may hold, on either protocol: the listeners' shared bounds."""

from __future__ import annotations

__all__ = ["MAX_HEADER_BYTES", "MAX_HEADER_FIELDS"]

MAX_HEADER_BYTES = 64 * 1024
"""Request line plus headers: far above the few short fields kube-scheduler sends, and a bound on what a client's
headers can make the server hold."""

MAX_HEADER_FIELDS = 100
"""Header fields in one request. kube-scheduler sends fewer than ten; the byte bound alone would admit thousands of
empty or one-byte indexed fields, each of which costs the parser a turn of its loop."""
