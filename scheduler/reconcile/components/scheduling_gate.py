"""Lifting Grove's scheduling gate, by Grove's rule (reference §2, ``checkAndRemovePodSchedulingGates``).

A pod's ``grove.io/podgang-pending-creation`` gate goes once the pod is listed in its PodGang's PodGroup and either
it belongs to a base gang or its base gang is scheduled (every base PodGroup has ``minReplicas`` bound pods). Only
Grove's own gate is removed; the write carries the pod's ``resourceVersion``. In Grove the PodClique controller's
pod component does this; here it runs after the PodGang component in the same pass, so a pod is listed and
ungated in one pass. It owns no objects: a deleted PodCliqueSet leaves it nothing to delete.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from api.grove import GANG_GATE
from scheduler.reconcile.client import KubeObject, ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.desired.state import Desired, GangPlan
from scheduler.reconcile.fanout import Fanout
from scheduler.reconcile.live import is_terminating, pod_is_bound

__all__ = ["SchedulingGates", "base_gang_scheduled", "lift_gates"]


@dataclass(frozen=True)
class SchedulingGates:
    api: ReconcileApi
    fanout: Fanout = field(default_factory=Fanout)

    def sync(self, state: PassState) -> int:
        """Leaves the count of pods still gated in ``state.gated``."""
        lifted, state.gated = lift_gates(
            self.api,
            desired=state.desired,
            gangs=state.gangs,
            pods_by_clique=state.pods_by_clique,
            fanout=self.fanout,
        )
        return lifted

    def delete(self, *, namespace: str, pcs: str) -> int:
        return 0


def lift_gates(
    api: ReconcileApi,
    *,
    desired: Desired,
    gangs: Mapping[str, KubeObject],
    pods_by_clique: Mapping[str, list[KubeObject]],
    fanout: Fanout | None = None,
) -> tuple[int, int]:
    """Remove the gate where Grove would, the pods' lifts sent together (``fanout``); returns (gates lifted, pods
    still gated)."""
    cliques = desired.cliques()
    scheduled = {gang.name: base_gang_scheduled(gang, pods_by_clique) for gang in desired.gangs if gang.is_base}
    waiting = 0
    lifts: list[tuple[KubeObject, list[KubeObject]]] = []  # pod → the gates it keeps
    for fqn, pods in pods_by_clique.items():
        plan = cliques[fqn]
        listed = _listed(gangs.get(plan.gang), fqn)
        base_ok = plan.base_gang is None or scheduled.get(plan.base_gang, False)
        for pod in pods:
            gates = pod["spec"].get("schedulingGates") or []
            if is_terminating(pod) or not any(g.get("name") == GANG_GATE for g in gates):
                continue
            if pod["metadata"]["name"] not in listed or not base_ok:
                waiting += 1
                continue
            lifts.append((pod, [g for g in gates if g.get("name") != GANG_GATE]))

    def lift(item: tuple[KubeObject, list[KubeObject]]) -> None:
        pod, remaining = item
        meta = pod["metadata"]
        # Gates can only be removed, so lifting the last one needs no precondition: any status write since the
        # pass read the pod (another controller's, a nomination) would otherwise make the lift a conflict.
        version = meta["resourceVersion"] if remaining else None
        api.set_pod_scheduling_gates(meta["namespace"], meta["name"], gates=remaining, resource_version=version)
        pod["spec"]["schedulingGates"] = remaining  # what the status computed later in this pass must see

    (fanout or Fanout()).map(lift, lifts)
    return len(lifts), waiting


def _listed(gang: KubeObject | None, fqn: str) -> set[str]:
    if gang is None:
        return set()
    groups = [g for g in gang["spec"].get("podgroups") or [] if g.get("name") == fqn]
    return {ref["name"] for g in groups for ref in g.get("podReferences") or []}


def base_gang_scheduled(base: GangPlan, pods_by_clique: Mapping[str, list[KubeObject]]) -> bool:
    """Grove's 'base gang scheduled': every base PodGroup has ≥ minReplicas bound pods (its PodClique's
    ``scheduledReplicas``, counted here from this pass's pods rather than from a status written a pass ago)."""
    return all(
        sum(1 for pod in pods_by_clique.get(clique.fqn, []) if pod_is_bound(pod)) >= clique.min_available
        for clique in base.cliques
    )
