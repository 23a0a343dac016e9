"""What exists for a PodCliqueSet: every object it owns, directly or through its scaling groups and PodCliques.

Ownership is checked by controller reference UID down Grove's chain (PodCliqueSet → PodCliqueScalingGroup →
PodClique → Pod), never by name alone: an object that merely carries our labels is not ours to change. Pods whose
controller is the PodCliqueSet itself (made by earlier versions of this reconciler, before PodCliques existed) are
adopted as they are, so an upgrade neither duplicates nor restarts a running gang.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject, OwnedKind, ReconcileApi

__all__ = ["OwnedObjects", "list_owned_objects"]


@dataclass
class OwnedObjects:
    groups: dict[str, KubeObject] = field(default_factory=dict)
    cliques: dict[str, KubeObject] = field(default_factory=dict)
    pods: list[KubeObject] = field(default_factory=list)
    gangs: dict[str, KubeObject] = field(default_factory=dict)
    services: list[KubeObject] = field(default_factory=list)
    hpas: list[KubeObject] = field(default_factory=list)


def _controller_uid(obj: KubeObject) -> str | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return next((str(r.get("uid")) for r in refs if r.get("controller")), None)


def _by_name(objects: Iterable[KubeObject]) -> dict[str, KubeObject]:
    return {obj["metadata"]["name"]: obj for obj in objects}


def controlled(api: ReconcileApi, kind: OwnedKind, pcs: PodCliqueSet, owners: set[str]) -> list[KubeObject]:
    """Objects of ``kind`` labelled part of ``pcs`` whose controller is one of ``owners`` (UIDs)."""
    objects = api.list_owned(kind, namespace=pcs.metadata.namespace, part_of=pcs.metadata.name)
    return [obj for obj in objects if _controller_uid(obj) in owners]


def list_owned_objects(api: ReconcileApi, pcs: PodCliqueSet) -> OwnedObjects:
    root = {pcs.metadata.uid}
    groups = _by_name(controlled(api, "PodCliqueScalingGroup", pcs, root))
    group_uids = {obj["metadata"]["uid"] for obj in groups.values()}
    cliques = _by_name(controlled(api, "PodClique", pcs, root | group_uids))
    clique_uids = {obj["metadata"]["uid"] for obj in cliques.values()}
    return OwnedObjects(
        groups=groups,
        cliques=cliques,
        pods=controlled(api, "Pod", pcs, clique_uids | root),
        gangs=_by_name(controlled(api, "PodGang", pcs, root)),
        services=controlled(api, "Service", pcs, root),
        hpas=controlled(api, "HorizontalPodAutoscaler", pcs, root),
    )
