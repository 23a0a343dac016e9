"""The merge patch that turns a stored status into the one wanted, or nothing when they already agree.

A status is written as a JSON merge patch (RFC 7386), where a key left out keeps its stored value. So a field the
reconciler owns that must go away (a finished update's ``currentlyUpdating``, the ``updateEndedAt`` of an update
that restarts) is sent as ``null``; fields it does not own (another controller's) are never named and stay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduler.reconcile.client import KubeObject

__all__ = ["status_patch"]


def status_patch(current: Mapping[str, Any], wanted: Mapping[str, Any]) -> KubeObject | None:
    """``wanted``'s keys, with ``null`` for what an object value of ``current`` holds and ``wanted``'s does not;
    ``None`` when every key of ``wanted`` already holds its value. A wanted ``None`` removes the key."""
    if all(current.get(key) == value for key, value in wanted.items()):
        return None
    patch: KubeObject = {}
    for key, value in wanted.items():
        stored = current.get(key)
        if isinstance(value, Mapping) and isinstance(stored, Mapping):
            patch[key] = {**{gone: None for gone in stored.keys() - value.keys()}, **value}
        else:
            patch[key] = value
    return patch
