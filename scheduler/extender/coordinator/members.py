"""Which gang a pod belongs to, and what that gang is made of right now.

A pod labelled ``grove.io/podgang=<g>`` belongs to PodGang ``<namespace>/<g>``; any other pod is a gang of one
(so every pod goes through the same plan → reserve → ready → bind path). Group membership comes from the
PodGang's ``podReferences``, which Grove fills as pods appear.
"""

from __future__ import annotations

from dataclasses import dataclass

from api.core import Pod
from api.grove import LABEL_PODGANG, PodGang
from scheduler.extender.state.store import ClusterStore

__all__ = ["SOLO_GROUP", "GangMembers", "GangRef", "GroupMembers", "gang_members", "gang_ref_of"]

SOLO_GROUP = "pod"
"""The one group of a gang of one."""


@dataclass(frozen=True)
class GangRef:
    """A gang's identity. Solo gangs get a key no PodGang can have (``pod:`` prefix; PodGang names are DNS names)."""

    namespace: str
    name: str
    solo: bool = False

    @property
    def key(self) -> str:
        prefix = "pod:" if self.solo else ""
        return f"{prefix}{self.namespace}/{self.name}"


def gang_ref_of(pod: Pod) -> GangRef:
    gang = pod.metadata.labels.get(LABEL_PODGANG)
    if gang:
        return GangRef(pod.metadata.namespace, gang)
    return GangRef(pod.metadata.namespace, pod.metadata.name, solo=True)


@dataclass(frozen=True)
class GroupMembers:
    name: str
    min_replicas: int
    pods: tuple[Pod, ...]  # referenced pods that exist, in reference order
    missing: tuple[str, ...]  # referenced pod keys not (yet) in the store

    def bound(self) -> list[Pod]:
        """Members running on a node: bound, not finished, not being deleted (a member being evicted or deleted
        is gone as far as the gang's guarantee goes, though its node's capacity is not free yet)."""
        return [pod for pod in self.pods if pod.spec.nodeName and not pod.terminal and not pod.deleting]

    def pending(self) -> list[Pod]:
        """Pods waiting for a node: exist, ungated, unbound, not finished, not being deleted."""
        return [
            pod
            for pod in self.pods
            if not pod.spec.nodeName and not pod.gated and not pod.terminal and not pod.deleting
        ]


@dataclass(frozen=True)
class GangMembers:
    ref: GangRef
    podgang: PodGang | None
    groups: tuple[GroupMembers, ...]


def gang_members(store: ClusterStore, ref: GangRef) -> GangMembers | str:
    """The gang's current members, or a reason it cannot be resolved (a PodGang that does not exist yet)."""
    if ref.solo:
        pod = store.pod(f"{ref.namespace}/{ref.name}")
        solo = GroupMembers(
            SOLO_GROUP,
            1,
            (pod,) if pod is not None else (),
            () if pod is not None else (f"{ref.namespace}/{ref.name}",),
        )
        return GangMembers(ref, None, (solo,))
    podgang = store.podgang(ref.key)
    if podgang is None:
        return f"PodGang {ref.key} (label {LABEL_PODGANG}) does not exist yet"
    groups = []
    for group in podgang.spec.podgroups:
        present: list[Pod] = []
        missing: list[str] = []
        for reference in group.podReferences:
            key = reference.key_in(ref.namespace)
            pod = store.pod(key)
            if pod is None:
                missing.append(key)
            else:
                present.append(pod)
        groups.append(GroupMembers(group.name, group.minReplicas, tuple(present), tuple(missing)))
    return GangMembers(ref, podgang, tuple(groups))
