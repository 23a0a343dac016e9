"""PodGang status as the extender reports it: ``phase`` Starting once the guaranteed pods are bound, Running once
they all run; condition ``Scheduled``; ``placementScore``. Other controllers' conditions (``Initialized``…) are
kept: a merge patch replaces the whole list, so the list we send starts from the one we read."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from api.grove import PodGang
from scheduler.coordinator.members import GangMembers

__all__ = ["running_status", "scheduled_status"]


def _conditions_with(podgang: PodGang, condition: dict[str, Any]) -> list[dict[str, Any]]:
    kept = [
        c.to_json_dict() for c in (podgang.status.conditions if podgang.status else []) if c.type != condition["type"]
    ]
    return [*kept, condition]


def scheduled_status(podgang: PodGang, *, placement_score: float | None, now: datetime) -> dict[str, Any]:
    condition = {
        "type": "Scheduled",
        "status": "True",
        "reason": "GuaranteedPodsBound",
        "message": "every guaranteed pod is bound to its planned node",
        "lastTransitionTime": now.isoformat().replace("+00:00", "Z"),
    }
    status: dict[str, Any] = {"phase": "Starting", "conditions": _conditions_with(podgang, condition)}
    if placement_score is not None:
        status["placementScore"] = placement_score
    return status


def running_status(members: GangMembers) -> dict[str, Any] | None:
    """``{"phase": "Running"}`` once every group has ``minReplicas`` running pods and the gang is not marked yet."""
    podgang = members.podgang
    if podgang is None or (podgang.status is not None and podgang.status.phase == "Running"):
        return None
    for group in members.groups:
        running = sum(1 for pod in group.pods if pod.status.phase == "Running")
        if running < max(group.min_replicas, 1):
            return None
    return {"phase": "Running"}
