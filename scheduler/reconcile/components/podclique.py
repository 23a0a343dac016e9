"""PodCliques, as Grove's controllers keep them: the standalone ones by the PodCliqueSet controller
(``components/podclique``), the members of a scaling group by the group's (``podcliquescalinggroup/components``).

Each is built from its clique template, owned by the PodCliqueSet or by its scaling group, and carries the
template's pod-template hash; its live ``spec.replicas`` belongs to whoever scales it. A PodClique no longer wanted
(its PodCliqueSet replica or group replica scaled in) is deleted, and its pods go with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from scheduler.reconcile.client import KubeObject, ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import converge_scaled, delete_scaled, release
from scheduler.reconcile.desired.cliques import pcs_owner, podclique_object
from scheduler.reconcile.desired.template_hash import template_hashes

__all__ = ["PodCliques"]


@dataclass(frozen=True)
class PodCliques:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs = state.pcs
        # First: one of these being deleted (by a user, or after its scaling group) may hold a name wanted again.
        deleting = (obj for obj in state.observed.deleting if obj["kind"] == "PodClique")
        released = sum(release(self.api, "PodClique", obj) for obj in deleting)
        owner = pcs_owner(pcs)
        hashes = template_hashes(pcs)
        wanted: dict[str, KubeObject] = {}
        for gang in state.desired.gangs:
            for clique in gang.cliques:
                # A group's PodCliques wait for the group to exist: they need its uid as their owner.
                parent = state.groups.get(clique.group.fqn) if clique.group is not None else owner
                if parent is not None:
                    wanted[clique.fqn] = podclique_object(
                        pcs=pcs, clique=clique, owner=parent, template_hash=hashes[clique.template.name]
                    )
        state.podcliques, writes = converge_scaled(
            self.api, "PodClique", namespace=pcs.metadata.namespace, live=state.observed.cliques, wanted=wanted
        )
        return released + writes

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_scaled(self.api, "PodClique", namespace=namespace, pcs=pcs)
