"""The preemption guard: kube-scheduler's default preemption knows nothing of gangs and, in the recordings,
evicted one worker of a bound gang. Before it acts, it asks us (``preempt``); we strike out every node whose
victim set would break a gang:

- a gang left with some group below ``minReplicas`` (evicting its members above the minimum, or the whole gang, is
  fine: neither leaves a gang that cannot run);
- a member of a gang whose priority is not below the preemptor's. kube-scheduler judges victims by the pods'
  ``spec.priority``; a Grove gang's priority is its PodGang's PriorityClass, which its pods do not carry
  (``translation.priority``), so a pod of priority 0 may belong to the most important gang in the cluster.

Members of gangs our profile places are never preemptors here: the extender makes room for their gang as a whole
(``making_room``), and the coordinator answers kube-scheduler's proposal for them with no victims.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from api.core import Pod
from scheduler.extender.coordinator.members import gang_members, gang_ref_of
from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.priority import gang_priority

__all__ = ["vetoed_nodes"]


def vetoed_nodes(victims: Mapping[str, Sequence[str]], *, store: ClusterStore, preemptor: int) -> dict[str, str]:
    """Node → why its victims are refused, for every node of the proposal that would break a gang.

    ``victims`` maps node → victim pod UIDs; ``preemptor`` is the preempting pod's priority, as kube-scheduler
    compared it. Victims the store does not know are not counted (nothing to protect)."""
    vetoes: dict[str, str] = {}
    for node, uids in victims.items():
        pods = [pod for pod in (store.pod_by_uid(uid) for uid in uids) if pod is not None]
        reason = _breaks_a_gang(pods, store=store, preemptor=preemptor)
        if reason:
            vetoes[node] = reason
    return vetoes


def _breaks_a_gang(victims: list[Pod], *, store: ClusterStore, preemptor: int) -> str | None:
    by_gang: dict[str, list[Pod]] = {}
    for pod in victims:
        ref = gang_ref_of(pod)
        if not ref.solo:
            by_gang.setdefault(ref.key, []).append(pod)
    for pods in by_gang.values():
        members = gang_members(store, gang_ref_of(pods[0]))
        if isinstance(members, str):
            continue
        priority = gang_priority(members.podgang, (p for g in members.groups for p in g.pods), store)
        if priority.value >= preemptor:
            return (
                f"would evict {pods[0].key} of PodGang {members.ref.key}, whose priority ({priority.source}) is not "
                f"below the preemptor's ({preemptor})"
            )
        lost = {pod.key for pod in pods}
        running = [pod for group in members.groups for pod in group.bound()]
        if running and all(pod.key in lost for pod in running):
            continue  # the whole gang goes: nothing is left half-running
        for group in members.groups:
            bound = group.bound()
            if not bound:
                continue
            left = sum(1 for pod in bound if pod.key not in lost)
            if left < group.min_replicas:
                return (
                    f"would leave PodGang {members.ref.key} group {group.name} with {left} of "
                    f"{group.min_replicas} guaranteed pods"
                )
    return None
