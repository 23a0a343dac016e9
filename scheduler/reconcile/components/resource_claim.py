"""ResourceClaims for DRA resource sharing at every level Grove has it: Grove's PodCliqueSet ``resourceclaim``
component, the scaling-group controller's ``ensurePCSGResourceClaims`` and the PodClique controller's
``resourceclaim`` component, in one (``desired.claims`` says which claims, named and labelled how).

Synced after scaling groups and PodCliques (a claim is controlled by its owner, so it needs the owner's uid) and
before the pods that reference them. A claim's spec is immutable in Kubernetes: an existing claim only has its
labels kept; one no longer wanted (a replica scaled in) is deleted, and those of a deleted owner go with it. A
template that can be found neither in ``resourceClaimTemplates`` nor as a ResourceClaimTemplate object refuses the
pass, naming the entry: the pods would otherwise wait for a claim nobody makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from api.grove import LABEL_PCS_REPLICA_INDEX, LABEL_PCSG, LABEL_PCSG_REPLICA_INDEX, LABEL_POD_INDEX, LABEL_PODCLIQUE
from scheduler.reconcile.client import KubeObject, ReconcileApi
from scheduler.reconcile.components.component import PassState, Refused
from scheduler.reconcile.components.converge import converge_fields, delete_orphans
from scheduler.reconcile.components.observed import controlled
from scheduler.reconcile.desired.claims import ClaimWanted, claim_object, level_claims
from scheduler.reconcile.desired.cliques import controller_reference, pcs_owner
from scheduler.reconcile.rules.fields import FieldError

__all__ = ["ResourceClaims"]

_T = "spec.template"


@dataclass(frozen=True)
class ResourceClaims:
    api: ReconcileApi

    def sync(self, state: PassState) -> int:
        pcs, template = state.pcs, state.pcs.spec.template
        if not (
            template.resourceSharing
            or any(group.resourceSharing for group in template.podCliqueScalingGroups)
            or any(clique.resourceSharing for clique in template.cliques)
        ):
            return 0
        name, namespace = pcs.metadata.name, pcs.metadata.namespace
        wanted: list[tuple[ClaimWanted, KubeObject]] = []
        owner = controller_reference(pcs_owner(pcs))
        wanted += [
            (claim, owner)
            for claim in level_claims(
                pcs=name,
                owner=name,
                entries=template.resourceSharing,
                replicas=max(pcs.spec.replicas, 0),
                owner_labels={},
                index_label=LABEL_PCS_REPLICA_INDEX,
                path=f"{_T}.resourceSharing",
            )
        ]
        group_index = {group.name: index for index, group in enumerate(template.podCliqueScalingGroups)}
        for group in state.desired.groups:
            if (live := state.groups.get(group.fqn)) is not None and group.config.resourceSharing:
                owner = controller_reference(live)
                path = f"{_T}.podCliqueScalingGroups[{group_index[group.config.name]}].resourceSharing"
                wanted += [
                    (claim, owner)
                    for claim in level_claims(
                        pcs=name,
                        owner=group.fqn,
                        entries=group.config.resourceSharing,
                        replicas=group.replicas,
                        owner_labels={LABEL_PCSG: group.fqn},
                        index_label=LABEL_PCSG_REPLICA_INDEX,
                        path=path,
                    )
                ]
        clique_index = {clique.name: index for index, clique in enumerate(template.cliques)}
        for fqn, clique in state.desired.cliques().items():
            if (live := state.podcliques.get(fqn)) is not None and clique.template.resourceSharing:
                owner = controller_reference(live)
                wanted += [
                    (claim, owner)
                    for claim in level_claims(
                        pcs=name,
                        owner=fqn,
                        entries=clique.template.resourceSharing,
                        replicas=clique.replicas,
                        owner_labels={LABEL_PODCLIQUE: fqn},
                        index_label=LABEL_POD_INDEX,
                        path=f"{_T}.cliques[{clique_index[clique.template.name]}].resourceSharing",
                    )
                ]
        objects = self._objects(state, wanted)
        owners = {pcs.metadata.uid}
        owners |= {obj["metadata"]["uid"] for obj in [*state.groups.values(), *state.podcliques.values()]}
        live_claims = controlled(self.api, "ResourceClaim", pcs, owners)
        return converge_fields(
            self.api, "ResourceClaim", namespace=namespace, live=live_claims, wanted=objects, fields=()
        )

    def delete(self, *, namespace: str, pcs: str) -> int:
        # The PodCliqueSet's own; a scaling group's or a PodClique's go with their owner.
        return delete_orphans(self.api, "ResourceClaim", namespace=namespace, pcs=pcs)

    def _objects(self, state: PassState, wanted: Sequence[tuple[ClaimWanted, KubeObject]]) -> list[KubeObject]:
        pcs = state.pcs
        internal = {config.name: config.templateSpec for config in pcs.spec.template.resourceClaimTemplates}
        found: dict[tuple[str, str], KubeObject] = {}
        objects = []
        for claim, owner in wanted:
            entry = claim.entry
            spec = internal.get(entry.name) if not entry.namespace else None
            if spec is None:  # Grove's ResolveTemplateSpec: the PodCliqueSet's own first, then an object
                key = (entry.namespace or pcs.metadata.namespace, entry.name)
                if key not in found:
                    template = self.api.get_resource_claim_template(*key)
                    if template is None:
                        message = (
                            f"ResourceClaimTemplate {key[0]}/{key[1]} not found: it is neither in "
                            "spec.template.resourceClaimTemplates nor in the cluster"
                        )
                        raise Refused(FieldError(f"{claim.path}.name", message))
                    found[key] = template.get("spec") or {}
                spec = found[key]
            objects.append(
                claim_object(wanted=claim, namespace=pcs.metadata.namespace, template_spec=spec, owner=owner)
            )
        return objects
