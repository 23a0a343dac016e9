"""Status the reconciler writes: PodGang ``Initialized`` (+ ``phase: Pending`` at creation) as Grove's operator
does, and PodCliqueSet status (replicas, availableReplicas, per-gang phase, conditions).

Pure functions from what exists to the status that should be; the controller writes only when they differ, so a
quiet cluster sees no writes at all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.gangs import is_terminating
from scheduler.reconcile.desired.state import CliquePlan, Desired, GangPlan

__all__ = [
    "CONDITION_SPEC_VALID",
    "Clock",
    "base_gang_scheduled",
    "condition",
    "gang_initialized",
    "merge_conditions",
    "pcs_status",
    "pod_is_bound",
    "pod_is_ready",
]

Clock = Callable[[], datetime]
CONDITION_SPEC_VALID = "SpecValid"


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


def pod_is_bound(pod: Mapping[str, Any]) -> bool:
    return bool(pod.get("spec", {}).get("nodeName")) and not is_terminating(pod)


def pod_is_ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return not is_terminating(pod) and any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def gang_initialized(gang: GangPlan, podgang: Mapping[str, Any]) -> bool:
    """Grove's rule: every PodClique of the gang has at least ``replicas`` pods listed in its PodGroup."""
    listed = {group["name"]: len(group.get("podReferences") or []) for group in podgang["spec"]["podgroups"]}
    return all(listed.get(clique.fqn, 0) >= clique.replicas for clique in gang.cliques)


def _count(
    pods_by_clique: Mapping[str, list[KubeObject]], clique: CliquePlan, test: Callable[[KubeObject], bool]
) -> int:
    return sum(1 for pod in pods_by_clique.get(clique.fqn, []) if test(pod))


def base_gang_scheduled(base: GangPlan, pods_by_clique: Mapping[str, list[KubeObject]]) -> bool:
    """Grove's 'base gang scheduled': every base PodGroup has ≥ minReplicas bound pods (its PodClique's
    ``scheduledReplicas``, counted here from this pass's pods rather than from a status written a pass ago)."""
    return all(_count(pods_by_clique, clique, pod_is_bound) >= clique.min_available for clique in base.cliques)


def _replica_available(gangs: list[GangPlan], pods_by_clique: Mapping[str, list[KubeObject]]) -> bool:
    """Grove: every standalone clique and every PCSG of the replica is not MinAvailableBreached."""
    cliques = [clique for gang in gangs for clique in gang.cliques]
    if not cliques:
        return False

    def healthy(clique: CliquePlan) -> bool:
        return _count(pods_by_clique, clique, pod_is_ready) >= clique.min_available

    if not all(healthy(clique) for clique in cliques if clique.group is None):
        return False
    groups: dict[str, dict[int, list[CliquePlan]]] = {}
    minimum: dict[str, int] = {}
    for clique in cliques:
        if clique.group is not None:
            groups.setdefault(clique.group.fqn, {}).setdefault(clique.group.replica, []).append(clique)
            minimum[clique.group.fqn] = clique.group.config.minAvailable or 1
    return all(
        sum(all(healthy(c) for c in members) for members in replicas.values()) >= minimum[name]
        for name, replicas in groups.items()
    )


def pcs_status(
    *,
    generation: int | None,
    replicas: int,
    desired: Desired,
    podgangs: Mapping[str, Mapping[str, Any]],
    pods_by_clique: Mapping[str, list[KubeObject]],
) -> KubeObject:
    """The PodCliqueSet status fields the reconciler owns (conditions are merged in by the caller)."""
    by_replica: dict[int, list[GangPlan]] = {}
    for gang in desired.gangs:
        by_replica.setdefault(gang.pcs_replica, []).append(gang)
    available = sum(_replica_available(gangs, pods_by_clique) for gangs in by_replica.values())
    statuses = [
        {"name": gang.name, "phase": (podgangs.get(gang.name, {}).get("status") or {}).get("phase", "Pending")}
        for gang in desired.gangs
    ]
    status: KubeObject = {"replicas": replicas, "availableReplicas": available, "podGangStatuses": statuses}
    if generation is not None:
        status["observedGeneration"] = generation
    return status
