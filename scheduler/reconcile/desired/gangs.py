"""PodGang objects for a desired gang, given the pods that exist now (reference §2).

A PodGroup's ``podReferences`` are the clique's pods that are not terminating and carry the gang's label, sorted by
name, so a gang is filled in as its pods appear and a re-run over the same pods yields the same object.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api.grove import (
    ANNOTATION_TOPOLOGY_NAME,
    LABEL_PODGANG,
    LABEL_SCHEDULER_NAME,
    SCHEDULER_API_VERSION,
    PodCliqueSet,
    PodGangTopologyConstraint,
)
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.cliques import controller_reference, pcs_owner
from scheduler.reconcile.desired.names import LABEL_COMPONENT, LABEL_MANAGED_BY, LABEL_PART_OF, MANAGED_BY
from scheduler.reconcile.desired.state import GangPlan
from scheduler.reconcile.live import is_terminating

__all__ = ["normalised_spec", "podgang_object"]

# Mirrored PCS metadata skips Grove's own keys (as Grove does) and kubectl's copy of the whole object (size).
_NOT_MIRRORED = ("grove.io/", "kubectl.kubernetes.io/last-applied-configuration")


def _mirrored(values: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in values.items() if not k.startswith(_NOT_MIRRORED)}


def _constraint(value: PodGangTopologyConstraint | None) -> KubeObject | None:
    return value.to_json_dict() if value is not None else None


def podgang_object(
    *,
    pcs: PodCliqueSet,
    gang: GangPlan,
    pods_by_clique: Mapping[str, Iterable[KubeObject]],
    scheduler_name: str,
    topology_name: str | None,
) -> KubeObject:
    """The PodGang as Grove's PodCliqueSet controller writes it (spec and metadata; status is written apart)."""
    groups: list[KubeObject] = []
    for clique in gang.cliques:
        members = [
            pod
            for pod in pods_by_clique.get(clique.fqn, ())
            if not is_terminating(pod) and pod["metadata"].get("labels", {}).get(LABEL_PODGANG) == gang.name
        ]
        references = sorted(
            ({"namespace": pod["metadata"]["namespace"], "name": pod["metadata"]["name"]} for pod in members),
            key=lambda ref: ref["name"],
        )
        group: KubeObject = {"name": clique.fqn, "podReferences": references, "minReplicas": clique.min_available}
        if clique.constraint is not None:
            group["topologyConstraint"] = _constraint(clique.constraint)
        groups.append(group)
    spec: KubeObject = {"podgroups": groups}
    if gang.constraint is not None:
        spec["topologyConstraint"] = _constraint(gang.constraint)
    if gang.group_configs:
        spec["topologyConstraintGroupConfigs"] = [
            {"name": c.name, "podGroupNames": list(c.pod_group_names), "topologyConstraint": _constraint(c.constraint)}
            for c in gang.group_configs
        ]
    if pcs.spec.template.priorityClassName:
        spec["priorityClassName"] = pcs.spec.template.priorityClassName
    labels = _mirrored(pcs.metadata.labels)
    labels.update(
        {
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_PART_OF: pcs.metadata.name,
            LABEL_COMPONENT: "podgang",
            LABEL_SCHEDULER_NAME: scheduler_name,
        }
    )
    annotations = _mirrored(pcs.metadata.annotations)
    if topology_name:
        annotations[ANNOTATION_TOPOLOGY_NAME] = topology_name
    metadata: KubeObject = {
        "name": gang.name,
        "namespace": pcs.metadata.namespace,
        "labels": labels,
        "ownerReferences": [controller_reference(pcs_owner(pcs))],
    }
    if annotations:
        metadata["annotations"] = annotations
    return {"apiVersion": SCHEDULER_API_VERSION, "kind": "PodGang", "metadata": metadata, "spec": spec}


def normalised_spec(spec: Mapping[str, Any]) -> Any:
    """A PodGang spec without nulls and empty lists or maps, so 'does the live object differ from ours?' ignores
    how the API server serialised what we wrote, without the pydantic round trip per gang it replaced, which a steady
    pass paid for every gang (``python -m benchmarks.bench_reconcile`` times a steady pass; figures in
    docs/README.md)."""
    if isinstance(spec, Mapping):
        compact = {key: normalised_spec(value) for key, value in spec.items()}
        return {key: value for key, value in compact.items() if value not in (None, [], {})}
    if isinstance(spec, list):
        return [normalised_spec(item) for item in spec]
    return spec
