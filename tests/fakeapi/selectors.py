"""Field and label selectors as kube-apiserver reads them from a list or watch query, and RFC 7386 merge patch."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["field_matches", "label_matches", "merge_patch"]


def _field(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part, {}) if isinstance(value, dict) else {}
    return value if isinstance(value, str) else ""


def field_matches(obj: dict[str, Any], selector: str | None) -> bool:
    """``a.b=v``, ``a.b==v`` and ``a.b!=v`` terms, comma-separated (all must hold)."""
    for term in filter(None, (selector or "").split(",")):
        if "!=" in term:
            path, value = term.split("!=", 1)
            if _field(obj, path) == value:
                return False
        else:
            path, value = term.replace("==", "=").split("=", 1)
            if _field(obj, path) != value:
                return False
    return True


def label_matches(obj: dict[str, Any], selector: str | None) -> bool:
    """Equality-based label selector terms: ``k=v``, ``k==v``, ``k!=v``, ``k`` (exists) and ``!k`` (absent)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: objects merge key by key, ``None`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
