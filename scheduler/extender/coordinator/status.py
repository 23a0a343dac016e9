"""PodGang status as the extender reports it: ``phase`` Starting once the guaranteed pods are bound, Running once
they all run; condition ``Scheduled`` (True when whole, False with reason ``PartiallyBound`` while some group has
fewer bound members than ``minReplicas``); ``placementScore``. Other controllers' conditions (``Initialized``…)
are kept: a merge patch replaces the whole list, so the list we send starts from the one we read."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from api.grove import PodGang
from scheduler.extender.coordinator.gang_state import GroupCount
from scheduler.extender.coordinator.members import GangMembers

__all__ = [
    "bound_counts",
    "partially_bound_status",
    "preempted_status",
    "running_status",
    "scheduled_status",
    "unscheduled_status",
]


def _with_phase(podgang: PodGang, status: dict[str, Any]) -> dict[str, Any]:
    """``status`` with the PodGang's phase, ``Pending`` when it has none yet: the CRD requires ``status.phase``, and
    a PodGang whose status Grove has not written yet (it creates the object, then sets the status) would otherwise
    have our patch refused by the API server (found on a real one: "status.phase: Required value")."""
    phase = podgang.status.phase if podgang.status and podgang.status.phase else "Pending"
    return {"phase": phase, **status}


def _conditions_with(podgang: PodGang, condition: dict[str, Any]) -> list[dict[str, Any]]:
    kept = [
        c.to_json_dict() for c in (podgang.status.conditions if podgang.status else []) if c.type != condition["type"]
    ]
    return [*kept, condition]


def _condition(status: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    return {
        "type": "Scheduled",
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": now.isoformat().replace("+00:00", "Z"),
    }


def scheduled_status(podgang: PodGang, *, placement_score: float | None, now: datetime) -> dict[str, Any]:
    condition = _condition("True", "GuaranteedPodsBound", "every guaranteed pod is bound to its planned node", now)
    status: dict[str, Any] = {"phase": "Starting", "conditions": _conditions_with(podgang, condition)}
    if placement_score is not None:
        status["placementScore"] = placement_score
    return status


def bound_counts(counts: Sequence[GroupCount]) -> str:
    """``group a: 3 of 8 bound; group b: 0 of 2 bound`` for the groups below ``minReplicas``."""
    return "; ".join(
        f"group {c.group}: {c.bound} of {c.min_replicas} bound" for c in counts if c.bound < c.min_replicas
    )


def partially_bound_status(podgang: PodGang, *, counts: Sequence[GroupCount], now: datetime) -> dict[str, Any]:
    message = f"{bound_counts(counts)}; grove-extender is binding or re-planning the rest"
    return _with_phase(
        podgang, {"conditions": _conditions_with(podgang, _condition("False", "PartiallyBound", message, now))}
    )


def unscheduled_status(podgang: PodGang, *, reason: str, now: datetime) -> dict[str, Any]:
    condition = _condition("False", "Unscheduled", reason or "no member is bound", now)
    return _with_phase(podgang, {"conditions": _conditions_with(podgang, condition)})


def preempted_status(podgang: PodGang, *, message: str, now: datetime) -> dict[str, Any]:
    """A gang evicted whole for one of higher priority: pending again, ``Scheduled=False, reason=Preempted``."""
    condition = _condition("False", "Preempted", message, now)
    return {"phase": "Pending", "conditions": _conditions_with(podgang, condition)}


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
