"""What a live object says about itself, read as Grove reads it: a pod that is terminating, bound or ready.

Kept below everything that reads live objects (the builders, status, the components), so each asks these questions
the one way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["is_terminating", "pod_is_bound", "pod_is_ready"]


def is_terminating(pod: Mapping[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def pod_is_bound(pod: Mapping[str, Any]) -> bool:
    return bool(pod.get("spec", {}).get("nodeName")) and not is_terminating(pod)


def pod_is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not is_terminating(pod) and any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
