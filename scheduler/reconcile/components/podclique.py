"""PodCliques, as Grove's controllers keep them: the standalone ones by the PodCliqueSet controller
(``components/podclique``), the members of a scaling group by the group's (``podcliquescalinggroup/components``).

Each is built from its clique template, owned by the PodCliqueSet or by its scaling group, and carries the
template's pod-template hash; its live ``spec.replicas`` belongs to whoever scales it. A PodClique no longer wanted
(its PodCliqueSet replica or group replica scaled in) is deleted, and its pods go with it.

A changed template reaches a PodClique when the update reaches its PodCliqueSet replica (``Rollout.takes_template``):
until then it keeps the template its pods were made from, so a pod it re-creates matches the rest of its gang. (Grove
rewrites standalone PodCliques at once and replaces their pods one by one in the replica being updated; its
scaling-group PodCliques keep their template until the group replica is recreated, as all of ours do.)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.grove import LABEL_TEMPLATE_HASH
from scheduler.reconcile.client import KubeObject, ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import converge_scaled, delete_scaled, release
from scheduler.reconcile.desired.cliques import pcs_owner, podclique_object

__all__ = ["PodCliques"]


@dataclass(frozen=True)
class PodCliques:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs, rollout = state.pcs, state.rollout
        # First: one of these being deleted (by a user, or after its scaling group) may hold a name wanted again.
        deleting = (obj for obj in state.observed.deleting if obj["kind"] == "PodClique")
        released = sum(release(self.api, "PodClique", obj) for obj in deleting)
        owner = pcs_owner(pcs)
        wanted: dict[str, KubeObject] = {}
        for gang in state.desired.gangs:
            for clique in gang.cliques:
                # A group's PodCliques wait for the group to exist: they need its uid as their owner.
                parent = state.groups.get(clique.group.fqn) if clique.group is not None else owner
                if parent is None:
                    continue
                template_hash = rollout.template_hashes[clique.template.name]
                live = state.observed.cliques.get(clique.fqn)
                if live is not None and _hash(live) != template_hash and not rollout.takes_template(clique.pcs_replica):
                    wanted[clique.fqn] = live  # its replica's turn has not come: it stays as it is
                    continue
                wanted[clique.fqn] = podclique_object(pcs=pcs, clique=clique, owner=parent, template_hash=template_hash)
        state.podcliques, writes = converge_scaled(
            self.api, "PodClique", namespace=pcs.metadata.namespace, live=state.observed.cliques, wanted=wanted
        )
        return released + writes

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_scaled(self.api, "PodClique", namespace=namespace, pcs=pcs)


def _hash(podclique: Mapping[str, Any]) -> str:
    return str((podclique["metadata"].get("labels") or {}).get(LABEL_TEMPLATE_HASH, ""))
