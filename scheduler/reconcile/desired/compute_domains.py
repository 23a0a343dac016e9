"""MNNVL ComputeDomains, as Grove's ``mnnvl/computedomain`` component makes them: one per PodCliqueSet replica and
MNNVL group that a GPU clique is enrolled in (``rules.mnnvl``), ``<pcs>-<r>-<group>``, for the NVIDIA DRA driver
(``resource.nvidia.com/v1beta1``). Its ``spec.channel.resourceClaimTemplate.name`` is the same name: the driver makes
that ResourceClaimTemplate, which the enrolled pods' ``mnnvl-claim`` names; ``numNodes: 0`` lets it grow with them.
Each is controlled by the PodCliqueSet and carries Grove's finalizer, which only the reconciler removes (scale-in or
the PodCliqueSet's deletion), so a domain in use is not deleted by accident."""

from __future__ import annotations

from api.grove import (
    ANNOTATION_MNNVL_GROUP,
    COMPUTE_DOMAIN_API_VERSION,
    FINALIZER_COMPUTE_DOMAIN,
    LABEL_PCS_REPLICA_INDEX,
    PodCliqueSet,
)
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.cliques import controller_reference, pcs_owner
from scheduler.reconcile.desired.names import (
    COMPONENT_COMPUTE_DOMAIN,
    LABEL_COMPONENT,
    LABEL_NAME,
    compute_domain_name,
    grove_labels,
)
from scheduler.reconcile.rules.mnnvl import has_gpu, resolve_group

__all__ = ["compute_domain_objects", "mnnvl_groups"]


def mnnvl_groups(pcs: PodCliqueSet) -> list[str]:
    """Grove's ``collectDistinctGroups``: the groups GPU cliques are enrolled in (clique, then scaling group, then
    PodCliqueSet), sorted."""
    template = pcs.spec.template
    group_of = {name: group for group in template.podCliqueScalingGroups for name in group.cliqueNames}
    found = set()
    for clique in template.cliques:
        if not has_gpu(clique.spec.podSpec):
            continue
        scaling = group_of.get(clique.name)
        layers = [clique.annotations, *([scaling.annotations] if scaling else []), pcs.metadata.annotations]
        if group := resolve_group(*layers):
            found.add(group)
    return sorted(found)


def compute_domain_objects(pcs: PodCliqueSet) -> list[KubeObject]:
    owner = controller_reference(pcs_owner(pcs))
    domains = []
    for replica in range(max(pcs.spec.replicas, 0)):
        for group in mnnvl_groups(pcs):
            name = compute_domain_name(pcs.metadata.name, replica, group)
            labels = grove_labels(
                pcs.metadata.name,
                **{
                    LABEL_NAME: name,
                    LABEL_COMPONENT: COMPONENT_COMPUTE_DOMAIN,
                    LABEL_PCS_REPLICA_INDEX: str(replica),
                    ANNOTATION_MNNVL_GROUP: group,  # Grove labels the domain with its group, under the same key
                },
            )
            domains.append(
                {
                    "apiVersion": COMPUTE_DOMAIN_API_VERSION,
                    "kind": "ComputeDomain",
                    "metadata": {
                        "name": name,
                        "namespace": pcs.metadata.namespace,
                        "labels": labels,
                        "finalizers": [FINALIZER_COMPUTE_DOMAIN],
                        "ownerReferences": [owner],
                    },
                    "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": name}}},
                }
            )
    return domains
