"""PodCliqueScalingGroups: one per scaling group and PodCliqueSet replica, as Grove's PodCliqueSet controller keeps
them (``components/podcliquescalinggroup``). Synced first: the PodCliques of a group are owned by it, and its live
``spec.replicas`` (a scaler's) says how many group replicas there are. Scaled in, a group is deleted; its
PodCliques and their pods go with it. Each carries Grove's finalizer, released here once the group is being
deleted."""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import converge_scaled, delete_scaled, release
from scheduler.reconcile.desired.cliques import pcs_owner, pcsg_object

__all__ = ["ScalingGroups"]


@dataclass(frozen=True)
class ScalingGroups:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs = state.pcs
        deleting = (obj for obj in state.observed.deleting if obj["kind"] == "PodCliqueScalingGroup")
        released = sum(release(self.api, "PodCliqueScalingGroup", obj) for obj in deleting)
        owner = pcs_owner(pcs)
        wanted = {group.fqn: pcsg_object(pcs=pcs, group=group, owner=owner) for group in state.desired.groups}
        state.groups, writes = converge_scaled(
            self.api,
            "PodCliqueScalingGroup",
            namespace=pcs.metadata.namespace,
            live=state.observed.groups,
            wanted=wanted,
        )
        return released + writes

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_scaled(self.api, "PodCliqueScalingGroup", namespace=namespace, pcs=pcs)
