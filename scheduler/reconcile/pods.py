"""Pods for a PodClique, built as plain dicts with the clique's full pod spec and Grove's metadata (reference §2).

``api.kube.Pod`` models only what the scheduler reads, so the pods we *create* are dicts: every field of the user's
``podSpec`` must survive. The name is ``<pclqFQN>-<5 random chars>`` (Kubernetes' ``generateName`` alphabet);
the caller supplies the random source, so tests are deterministic.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from typing import Any

from api.grove import GANG_GATE, PodCliqueSet
from scheduler.reconcile.desired import CliquePlan
from scheduler.reconcile.names import (
    ANNOTATION_TOPOLOGY_NAME,
    LABEL_BASE_PODGANG,
    LABEL_COMPONENT,
    LABEL_MANAGED_BY,
    LABEL_NAME,
    LABEL_PART_OF,
    LABEL_PCS_REPLICA_INDEX,
    LABEL_PCSG,
    LABEL_PCSG_REPLICA_INDEX,
    LABEL_POD_INDEX,
    LABEL_PODCLIQUE,
    LABEL_PODGANG,
    LABEL_TEMPLATE_HASH,
    MANAGED_BY,
    base_gang_name,
)

__all__ = ["KubeObject", "owner_reference", "pod_name", "pod_object", "template_hash"]

KubeObject = dict[str, Any]
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' utilrand: no vowels, no look-alikes


def pod_name(clique_fqn: str, rng: random.Random) -> str:
    return f"{clique_fqn}-{''.join(rng.choice(_SUFFIX_ALPHABET) for _ in range(5))}"


def owner_reference(pcs: PodCliqueSet) -> KubeObject:
    """Controller reference to the PodCliqueSet, so Kubernetes' garbage collector removes what we created with it."""
    return {
        "apiVersion": pcs.apiVersion,
        "kind": pcs.kind,
        "name": pcs.metadata.name,
        "uid": pcs.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def template_hash(pcs: PodCliqueSet, clique: CliquePlan) -> str:
    """Grove's ``grove.io/pod-template-hash`` inputs: template labels, annotations, podSpec and priorityClassName."""
    template = clique.template
    material = {
        "labels": template.labels,
        "annotations": template.annotations,
        "podSpec": template.spec.podSpec,
        "priorityClassName": pcs.spec.template.priorityClassName or "",
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()[:10]


def clique_labels(pcs: PodCliqueSet, clique: CliquePlan) -> dict[str, str]:
    """The labels Grove puts on the PodClique (and so on each of its pods)."""
    labels = dict(clique.template.labels)
    labels.update(
        {
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_PART_OF: pcs.metadata.name,
            LABEL_NAME: clique.fqn,
            LABEL_COMPONENT: "pcsg-podclique" if clique.group else "pcs-podclique",
            LABEL_PCS_REPLICA_INDEX: str(clique.pcs_replica),
            LABEL_PODGANG: clique.gang,
            LABEL_TEMPLATE_HASH: template_hash(pcs, clique),
        }
    )
    if clique.group is not None:
        labels[LABEL_PCSG] = clique.group.fqn
        labels[LABEL_PCSG_REPLICA_INDEX] = str(clique.group.replica)
    if clique.base_gang is not None:
        labels[LABEL_BASE_PODGANG] = clique.base_gang
    return labels


def _grove_env(pcs: PodCliqueSet, clique: CliquePlan) -> list[KubeObject]:
    service = base_gang_name(pcs.metadata.name, clique.pcs_replica)
    env: list[KubeObject] = [
        {"name": "GROVE_PCS_NAME", "value": pcs.metadata.name},
        {"name": "GROVE_PCS_INDEX", "value": str(clique.pcs_replica)},
        {"name": "GROVE_PCLQ_NAME", "value": clique.fqn},
        {"name": "GROVE_HEADLESS_SERVICE", "value": f"{service}.{pcs.metadata.namespace}.svc.cluster.local"},
        _label_ref("GROVE_PCLQ_POD_INDEX", LABEL_POD_INDEX),
    ]
    if clique.group is not None:
        env += [
            _label_ref("GROVE_PCSG_NAME", LABEL_PCSG),
            _label_ref("GROVE_PCSG_INDEX", LABEL_PCSG_REPLICA_INDEX),
            {"name": "GROVE_PCSG_TEMPLATE_NUM_PODS", "value": str(clique.group.template_pods)},
        ]
    return env


def _label_ref(name: str, label: str) -> KubeObject:
    # A downward-API reference, as Grove does: the value follows the label, so one pod spec serves any index.
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}


def pod_object(*, pcs: PodCliqueSet, clique: CliquePlan, index: int, name: str, scheduler_name: str) -> KubeObject:
    """The pod Grove's PodClique controller would create for pod index ``index`` of ``clique``, gated."""
    labels = clique_labels(pcs, clique)
    labels.update({LABEL_PODCLIQUE: clique.fqn, LABEL_POD_INDEX: str(index)})
    annotations = {k: v for k, v in clique.template.annotations.items() if k != ANNOTATION_TOPOLOGY_NAME}
    spec: KubeObject = copy.deepcopy(clique.template.spec.podSpec)
    spec["schedulingGates"] = [{"name": GANG_GATE}]
    spec["schedulerName"] = scheduler_name
    spec["hostname"] = f"{clique.fqn}-{index}"
    spec["subdomain"] = base_gang_name(pcs.metadata.name, clique.pcs_replica)
    grove_env = _grove_env(pcs, clique)
    reserved = {item["name"] for item in grove_env}
    for kind in ("initContainers", "containers"):
        for container in spec.get(kind) or []:
            kept = [item for item in container.get("env") or [] if item.get("name") not in reserved]
            container["env"] = kept + copy.deepcopy(grove_env)
    metadata: KubeObject = {
        "name": name,
        "namespace": pcs.metadata.namespace,
        "labels": labels,
        "ownerReferences": [owner_reference(pcs)],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
