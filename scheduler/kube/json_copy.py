"""A deep copy of JSON data (dicts, lists and scalars), the one the in-memory API and the reconciler's cache share.

Every object they hand out is copied, so the copy is on their hot path: a plain recursion over dicts and lists
is cheaper than ``copy.deepcopy`` (which keeps a memo for cycles JSON cannot have) and than the ``json`` round trip
each of them used before (``python -m benchmarks.bench_reconcile`` runs passes through it).
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["json_copy"]

_T = TypeVar("_T")


def json_copy(value: _T) -> _T:
    copied: Any = value
    if isinstance(value, dict):
        copied = {key: json_copy(item) for key, item in value.items()}
    elif isinstance(value, list):
        copied = [json_copy(item) for item in value]
    return copied  # type: ignore[no-any-return]
