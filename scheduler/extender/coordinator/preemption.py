"""The preemption guard: kube-scheduler's default preemption knows nothing of gangs and, in the recordings,
evicted one worker of a bound gang. Before it acts, it asks us (``preempt``); we strike out every node whose
victim set would leave a gang with bound members below ``minReplicas`` in some group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from api.core import Pod
from scheduler.extender.coordinator.members import gang_members, gang_ref_of
from scheduler.extender.state.store import ClusterStore

__all__ = ["vetoed_nodes"]


def vetoed_nodes(victims: Mapping[str, Sequence[str]], *, store: ClusterStore) -> dict[str, str]:
    """Node → why its victims are refused, for every node of the proposal that would break a gang.

    ``victims`` maps node → victim pod UIDs. Victims the store does not know are not counted (nothing to protect).
    """
    vetoes: dict[str, str] = {}
    for node, uids in victims.items():
        pods = [pod for pod in (store.pod_by_uid(uid) for uid in uids) if pod is not None]
        reason = _breaks_a_gang(pods, store=store)
        if reason:
            vetoes[node] = reason
    return vetoes


def _breaks_a_gang(victims: list[Pod], *, store: ClusterStore) -> str | None:
    by_gang: dict[str, list[Pod]] = {}
    for pod in victims:
        ref = gang_ref_of(pod)
        if not ref.solo:
            by_gang.setdefault(ref.key, []).append(pod)
    for pods in by_gang.values():
        members = gang_members(store, gang_ref_of(pods[0]))
        if isinstance(members, str):
            continue
        lost = {pod.key for pod in pods}
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
