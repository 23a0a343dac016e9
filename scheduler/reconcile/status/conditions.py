"""Status conditions as Grove writes them: built by type, merged so that ``lastTransitionTime`` moves only when a
condition's status flips and conditions others wrote (the extender's, on a PodGang) are kept."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from scheduler.reconcile.client import KubeObject

__all__ = ["Clock", "condition", "condition_of", "merge_conditions", "stamp"]

Clock = Callable[[], datetime]


def stamp(now: datetime) -> str:
    """``now`` as a ``metav1.Time`` is written: RFC 3339, whole seconds, UTC."""
    aware = now if now.tzinfo is not None else now.replace(tzinfo=UTC)  # a naive clock is read as UTC
    return aware.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, status: str, *, reason: str, message: str) -> KubeObject:
    return {"type": type_, "status": status, "reason": reason, "message": message}


def merge_conditions(
    current: Iterable[Mapping[str, Any]], wanted: Iterable[KubeObject], *, now: str
) -> list[KubeObject]:
    """``current`` with ``wanted`` applied by type; ``lastTransitionTime`` moves only when the status flips."""
    merged = {str(c.get("type")): dict(c) for c in current}
    for item in wanted:
        old = merged.get(item["type"])
        same = old is not None and old.get("status") == item["status"]
        stamp = old.get("lastTransitionTime") if same and old is not None else now
        merged[item["type"]] = {**item, "lastTransitionTime": stamp}
    return list(merged.values())


def condition_of(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)
