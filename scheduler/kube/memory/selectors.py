"""Field and label selectors as kube-apiserver reads them from a list or watch query, and RFC 7386 merge patch."""

from __future__ import annotations

import copy
import functools
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


@functools.lru_cache(maxsize=256)
def _terms(selector: str) -> tuple[str, ...]:
    """Split on the commas between terms, not those inside ``in (a,b)``; remembered, as a list or watch asks it of
    every object."""
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    return tuple(term.strip() for term in [*terms, current] if term.strip())


def label_matches(obj: dict[str, Any], selector: str | None) -> bool:
    """Label selector terms: ``k=v``, ``k==v``, ``k!=v``, ``k`` (exists), ``!k`` (absent), and the set-based
    ``k in (a,b)`` and ``k notin (a,b)``."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in _terms(selector or ""):
        if " in (" in term or " notin (" in term:
            key, operator, rest = term.split(" ", 2)
            values = {v.strip() for v in rest.strip().removeprefix("(").removesuffix(")").split(",")}
            if (labels.get(key.strip()) in values) != (operator == "in"):
                return False
        elif "!=" in term:
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
