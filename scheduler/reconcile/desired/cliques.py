"""PodClique and PodCliqueScalingGroup objects for a desired clique or group, as Grove's controllers build them.

Ownership is Grove's: PodCliqueSet → PodCliqueScalingGroup → its PodCliques, PodCliqueSet → standalone PodCliques,
PodClique → Pod. A PodClique's ``spec`` is its template's, with ``startsAfter`` resolved to parent FQNs and, for a
scaling-group member, the group's ``GROVE_PCSG_*`` variables already prepended to every container (reference §2);
its pods are built from it (``pods``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from api.grove import (
    ANNOTATION_MNNVL_GROUP,
    ANNOTATION_TOPOLOGY_NAME,
    FINALIZER_PCSG,
    FINALIZER_PODCLIQUE,
    GROVE_API_VERSION,
    LABEL_BASE_PODGANG,
    LABEL_PCS_REPLICA_INDEX,
    LABEL_PCSG,
    LABEL_PCSG_REPLICA_INDEX,
    LABEL_PODGANG,
    LABEL_TEMPLATE_HASH,
    MNNVL_CLAIM,
    PodCliqueSet,
)
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.names import (
    COMPONENT_PCS_PODCLIQUE,
    COMPONENT_PCSG,
    COMPONENT_PCSG_PODCLIQUE,
    LABEL_COMPONENT,
    LABEL_NAME,
    compute_domain_name,
    grove_labels,
)
from scheduler.reconcile.desired.state import CliquePlan, GroupPlan
from scheduler.reconcile.rules.mnnvl import has_gpu, resolve_group

__all__ = [
    "controller_reference",
    "label_ref",
    "pcs_owner",
    "pcsg_object",
    "podclique_object",
    "prepend_env",
]


def controller_reference(owner: Mapping[str, Any]) -> KubeObject:
    """Controller reference to ``owner`` (an API object as a dict), so Kubernetes' garbage collector removes what
    we created with it."""
    meta = owner["metadata"]
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pcs_owner(pcs: PodCliqueSet) -> KubeObject:
    """Just what ``controller_reference`` reads of a PodCliqueSet (dumping the whole model per object is slow)."""
    return {
        "apiVersion": pcs.apiVersion,
        "kind": pcs.kind,
        "metadata": {"name": pcs.metadata.name, "uid": pcs.metadata.uid},
    }


def label_ref(name: str, label: str) -> KubeObject:
    # A downward-API reference, as Grove does: the value follows the label, so one pod spec serves any index.
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def prepend_env(spec: KubeObject, env: list[KubeObject]) -> None:
    """Grove's ``PrependEnvVarsToContainers``: ``env`` first in every container and init container, replacing a
    user variable of the same name, so the user's own variables can refer to ours (``$(GROVE_PCLQ_NAME)``)."""
    names = {item["name"] for item in env}
    for kind in ("containers", "initContainers"):
        for container in spec.get(kind) or []:
            kept = [item for item in container.get("env") or [] if item.get("name") not in names]
            container["env"] = copy.deepcopy(env) + kept


def _clique_labels(pcs: PodCliqueSet, clique: CliquePlan, template_hash: str) -> dict[str, str]:
    labels = dict(clique.template.labels)
    labels.update(
        grove_labels(
            pcs.metadata.name,
            **{
                LABEL_NAME: clique.fqn,
                LABEL_COMPONENT: COMPONENT_PCSG_PODCLIQUE if clique.group else COMPONENT_PCS_PODCLIQUE,
                LABEL_PCS_REPLICA_INDEX: str(clique.pcs_replica),
                LABEL_PODGANG: clique.gang,
                LABEL_TEMPLATE_HASH: template_hash,
            },
        )
    )
    if clique.group is not None:
        labels[LABEL_PCSG] = clique.group.fqn
        labels[LABEL_PCSG_REPLICA_INDEX] = str(clique.group.replica)
    if clique.base_gang is not None:
        labels[LABEL_BASE_PODGANG] = clique.base_gang
    return labels


def _add_mnnvl_claim(spec: KubeObject, template_name: str) -> None:
    """Grove's ``InjectMNNVLIntoPodSpec``: the claim on the ComputeDomain's template, used by every container that
    asks for a GPU; nothing when none does, or when the pod has the claim already."""
    if any(claim.get("name") == MNNVL_CLAIM for claim in spec.get("resourceClaims") or []):
        return
    users = [c for kind in ("containers", "initContainers") for c in spec.get(kind) or [] if has_gpu({kind: [c]})]
    if not users:
        return
    for container in users:
        claims = container.setdefault("resources", {}).setdefault("claims", [])
        if not any(claim.get("name") == MNNVL_CLAIM for claim in claims):
            claims.append({"name": MNNVL_CLAIM})
    spec.setdefault("resourceClaims", []).append({"name": MNNVL_CLAIM, "resourceClaimTemplateName": template_name})


def _clique_pod_spec(pcs: PodCliqueSet, clique: CliquePlan) -> KubeObject:
    spec: KubeObject = json.loads(json.dumps(clique.template.spec.podSpec))  # a private copy, faster than deepcopy
    if clique.group is not None:  # Grove's PCSG controller adds these to the PodClique's own pod spec
        prepend_env(
            spec,
            [
                label_ref("GROVE_PCSG_NAME", LABEL_PCSG),
                {"name": "GROVE_PCSG_TEMPLATE_NUM_PODS", "value": str(clique.group.template_pods)},
                label_ref("GROVE_PCSG_INDEX", LABEL_PCSG_REPLICA_INDEX),
            ],
        )
    # MNNVL: the clique's group, else its scaling group's (which inherits the PodCliqueSet's), else the PodCliqueSet's.
    layers = [clique.template.annotations, *([clique.group.config.annotations] if clique.group else [])]
    if group := resolve_group(*layers, pcs.metadata.annotations):
        _add_mnnvl_claim(spec, compute_domain_name(pcs.metadata.name, clique.pcs_replica, group))
    return spec


def podclique_object(
    *, pcs: PodCliqueSet, clique: CliquePlan, owner: Mapping[str, Any], template_hash: str
) -> KubeObject:
    """The PodClique ``clique.fqn``, controlled by ``owner`` (the PodCliqueSet, or its scaling group);
    ``template_hash`` is its template's (``template_hash.template_hashes``: computed once per pass, not per clique)."""
    template = clique.template
    spec: KubeObject = {
        "roleName": template.spec.roleName,
        "podSpec": _clique_pod_spec(pcs, clique),
        "replicas": clique.replicas,
        "minAvailable": clique.min_available,
    }
    if clique.parents:
        spec["startsAfter"] = [fqn for fqn, _ in clique.parents]
    if template.spec.autoScalingConfig is not None:
        spec["autoScalingConfig"] = template.spec.autoScalingConfig.to_json_dict()
    metadata: KubeObject = {
        "name": clique.fqn,
        "namespace": pcs.metadata.namespace,
        "labels": _clique_labels(pcs, clique, template_hash),
        "ownerReferences": [controller_reference(owner)],
        "finalizers": [FINALIZER_PODCLIQUE],  # Grove adds it at creation (podclique.go buildResource)
    }
    # The PodGang chooses the topology; a template's topology annotation does not travel on (as in Grove).
    annotations = {k: v for k, v in template.annotations.items() if k != ANNOTATION_TOPOLOGY_NAME}
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": GROVE_API_VERSION, "kind": "PodClique", "metadata": metadata, "spec": spec}


def pcsg_object(*, pcs: PodCliqueSet, group: GroupPlan, owner: Mapping[str, Any]) -> KubeObject:
    """The PodCliqueScalingGroup ``group.fqn``; ``spec.replicas`` is the count to create it with."""
    config = group.config
    metadata: KubeObject = {
        "name": group.fqn,
        "namespace": pcs.metadata.namespace,
        "labels": grove_labels(
            pcs.metadata.name,
            **{
                LABEL_NAME: group.fqn,
                LABEL_COMPONENT: COMPONENT_PCSG,
                LABEL_PCS_REPLICA_INDEX: str(group.pcs_replica),
            },
        ),
        "ownerReferences": [controller_reference(owner)],
        "finalizers": [FINALIZER_PCSG],
    }
    annotations = dict(config.annotations)
    if ANNOTATION_MNNVL_GROUP in pcs.metadata.annotations:  # Grove's propagateMNNVLAnnotations: a group inherits it
        annotations.setdefault(ANNOTATION_MNNVL_GROUP, pcs.metadata.annotations[ANNOTATION_MNNVL_GROUP])
    if annotations:
        metadata["annotations"] = annotations
    spec = {
        "replicas": group.replicas,
        "minAvailable": config.minAvailable or 1,
        "cliqueNames": list(config.cliqueNames),
    }
    return {"apiVersion": GROVE_API_VERSION, "kind": "PodCliqueScalingGroup", "metadata": metadata, "spec": spec}
