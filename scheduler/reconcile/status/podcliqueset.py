"""PodCliqueSet status: replicas, availableReplicas (Grove's rule, per PCS replica), each PodGang's phase, and
``hpaPodSelector`` (the scale subresource's selector, so an HPA can scale a whole PodCliqueSet).

A pure function from what exists to the status that should be; ``reporting`` writes it only when it differs, so a
quiet cluster sees no writes at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.names import grove_labels, selector_string
from scheduler.reconcile.desired.state import CliquePlan, Desired, GangPlan
from scheduler.reconcile.live import pod_is_ready

__all__ = ["CONDITION_SPEC_VALID", "pcs_status"]

CONDITION_SPEC_VALID = "SpecValid"


def _count(
    pods_by_clique: Mapping[str, list[KubeObject]], clique: CliquePlan, test: Callable[[KubeObject], bool]
) -> int:
    return sum(1 for pod in pods_by_clique.get(clique.fqn, []) if test(pod))


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
    name: str,
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
    # Grove's mutateSelector: every pod of the PodCliqueSet, by the labels all its objects carry.
    status["hpaPodSelector"] = selector_string(grove_labels(name))
    if generation is not None:
        status["observedGeneration"] = generation
    return status
