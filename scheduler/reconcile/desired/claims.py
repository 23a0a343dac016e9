"""DRA resource sharing: the ResourceClaims a PodCliqueSet's ``resourceSharing`` asks for, and the claims each pod
references (Grove's ``internal/resourceclaim``, and the ``resourceclaim`` components of its PodCliqueSet, scaling
group and PodClique controllers).

Three levels share claims, each owning its own: the PodCliqueSet (``spec.template.resourceSharing``, ``filter`` by
clique or scaling-group name), a scaling group (``podCliqueScalingGroups[].resourceSharing``, ``filter`` by member
clique) and a PodClique (``cliques[].resourceSharing``). An entry's ``scope`` makes one claim per owner
(``AllReplicas``: ``<owner>-all-<template>``) or one per owner replica (``PerReplica``: ``<owner>-<i>-<template>``,
where ``i`` is the PodCliqueSet replica, the group replica or, for a PodClique, the pod index). Each claim is
controlled by its owner (the PodCliqueSet, the live scaling group or PodClique), labelled
``app.kubernetes.io/component=resource-claim`` and, per level, with its owner and replica index as Grove labels them.
Its spec is the template's: the PodCliqueSet's own ``resourceClaimTemplates`` entry of that name (when the entry names
no namespace), else the ResourceClaimTemplate object of that name. A pod references, in this order, the PodCliqueSet's
claims (AllReplicas, then its replica's), its group's, then its PodClique's — as ``spec.resourceClaims[]`` entries
named after the claim and as a ``resources.claims[]`` entry in every container and init container, so each may use
the devices.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from api.grove import ResourceSharing
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.names import COMPONENT_RESOURCE_CLAIM, LABEL_COMPONENT, grove_labels
from scheduler.reconcile.desired.state import CliquePlan

__all__ = [
    "RESOURCE_API_VERSION",
    "ClaimWanted",
    "add_claim_references",
    "claim_name",
    "claim_object",
    "level_claims",
    "pod_claim_names",
]

RESOURCE_API_VERSION = "resource.k8s.io/v1"


def claim_name(owner: str, entry: ResourceSharing, replica: int | None) -> str:
    """``<owner>-all-<template>`` (AllReplicas) or ``<owner>-<replica>-<template>`` (PerReplica)."""
    return f"{owner}-all-{entry.name}" if replica is None else f"{owner}-{replica}-{entry.name}"


def _matches(entry: ResourceSharing, names: Sequence[str]) -> bool:
    """Grove's ``FilterMatches``: no filter is everyone; otherwise any of ``names`` listed in it."""
    if entry.filter is None or not names:
        return True
    listed = set(entry.filter.childCliqueNames) | set(entry.filter.childScalingGroupNames)
    return any(name in listed for name in names)


def _names(owner: str, entries: Iterable[ResourceSharing], replica: int, match: Sequence[str]) -> list[str]:
    chosen = [entry for entry in entries if _matches(entry, match)]
    return [claim_name(owner, e, None) for e in chosen if e.scope == "AllReplicas"] + [
        claim_name(owner, e, replica) for e in chosen if e.scope == "PerReplica"
    ]


def pod_claim_names(
    *, pcs: str, pcs_sharing: Sequence[ResourceSharing], clique: CliquePlan, pod_index: int
) -> list[str]:
    """The claims a pod of ``clique`` at ``pod_index`` references, in Grove's order (``injectAllResourceClaimRefs``)."""
    group = clique.group
    match = [clique.template.name] + ([group.config.name] if group is not None else [])
    names = _names(pcs, pcs_sharing, clique.pcs_replica, match)
    if group is not None:
        names += _names(group.fqn, group.config.resourceSharing, group.replica, [clique.template.name])
    return names + _names(clique.fqn, clique.template.resourceSharing, pod_index, [])


def add_claim_references(spec: KubeObject, names: Iterable[str]) -> None:
    """Grove's ``InjectResourceClaimRefs``: each claim into the pod, and into every container and init container."""
    for name in names:
        spec.setdefault("resourceClaims", []).append({"name": name, "resourceClaimName": name})
        for kind in ("containers", "initContainers"):
            for container in spec.get(kind) or []:
                container.setdefault("resources", {}).setdefault("claims", []).append({"name": name})


@dataclass(frozen=True)
class ClaimWanted:
    """One ResourceClaim to keep: its name and labels, the entry it comes from and where that entry is written."""

    name: str
    labels: dict[str, str]
    entry: ResourceSharing
    path: str  # the entry's JSON path, for an error about its template


def level_claims(
    *,
    pcs: str,
    owner: str,
    entries: Sequence[ResourceSharing],
    replicas: int,
    owner_labels: dict[str, str],
    index_label: str,
    path: str,
) -> list[ClaimWanted]:
    """The claims one owner's ``entries`` ask for: AllReplicas ones, then PerReplica ones for ``range(replicas)``."""
    base = {**grove_labels(pcs, **{LABEL_COMPONENT: COMPONENT_RESOURCE_CLAIM}), **owner_labels}
    wanted: list[ClaimWanted] = []
    for index, entry in enumerate(entries):
        at = f"{path}[{index}]"
        if entry.scope == "AllReplicas":
            wanted.append(ClaimWanted(claim_name(owner, entry, None), dict(base), entry, at))
        elif entry.scope == "PerReplica":
            wanted += [
                ClaimWanted(claim_name(owner, entry, replica), {**base, index_label: str(replica)}, entry, at)
                for replica in range(replicas)
            ]
    return wanted


def claim_object(*, wanted: ClaimWanted, namespace: str, template_spec: KubeObject, owner: KubeObject) -> KubeObject:
    """The ResourceClaim ``wanted.name``: the template's ``spec``, controlled by ``owner`` (a controller reference)."""
    return {
        "apiVersion": RESOURCE_API_VERSION,
        "kind": "ResourceClaim",
        "metadata": {
            "name": wanted.name,
            "namespace": namespace,
            "labels": wanted.labels,
            "ownerReferences": [owner],
        },
        "spec": template_spec.get("spec") or {},
    }
