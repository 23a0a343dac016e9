"""What exists for a PodCliqueSet when a pass begins, and what a scaler set on it.

Ownership is checked by controller reference UID down Grove's chain (PodCliqueSet → PodCliqueScalingGroup →
PodClique → Pod), never by name alone: an object that merely carries our labels is not ours to change. Pods whose
controller is the PodCliqueSet itself (made by earlier versions of this reconciler, before PodCliques existed) are
adopted as they are, so an upgrade neither duplicates nor restarts a running gang.

Only the chain is read up front, because the rules and the desired state need it before any component runs:
whether the PodCliqueSet is being created (no pods, no gangs yet) and the replicas a scaler set. Other components
list their own kind (``controlled``) when they sync it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject, OwnedKind, ReconcileApi
from scheduler.reconcile.desired.state import LiveScale
from scheduler.reconcile.rules.limits import Limits

__all__ = ["Observed", "controlled", "live_scale", "observe"]

log = logging.getLogger(__name__)


@dataclass
class Observed:
    groups: dict[str, KubeObject] = field(default_factory=dict)
    cliques: dict[str, KubeObject] = field(default_factory=dict)
    pods: list[KubeObject] = field(default_factory=list)
    gangs: dict[str, KubeObject] = field(default_factory=dict)
    # Scaling groups and PodCliques of the PodCliqueSet being deleted, whoever owns them (a group's PodCliques
    # outlive it until the garbage collector gets to them): their finalizers are ours to release.
    deleting: list[KubeObject] = field(default_factory=list)


def _controller_uid(obj: KubeObject) -> str | None:
    refs = obj["metadata"].get("ownerReferences") or []
    return next((str(r.get("uid")) for r in refs if r.get("controller")), None)


def _by_name(objects: Iterable[KubeObject]) -> dict[str, KubeObject]:
    return {obj["metadata"]["name"]: obj for obj in objects}


def controlled(api: ReconcileApi, kind: OwnedKind, pcs: PodCliqueSet, owners: set[str]) -> list[KubeObject]:
    """Objects of ``kind`` labelled part of ``pcs`` whose controller is one of ``owners`` (UIDs)."""
    objects = api.list_owned(kind, namespace=pcs.metadata.namespace, part_of=pcs.metadata.name)
    return _of(objects, owners)


def _of(objects: list[KubeObject], owners: set[str]) -> list[KubeObject]:
    return [obj for obj in objects if _controller_uid(obj) in owners]


def observe(api: ReconcileApi, pcs: PodCliqueSet) -> Observed:
    root = {pcs.metadata.uid}
    namespace, name = pcs.metadata.namespace, pcs.metadata.name
    all_groups = api.list_owned("PodCliqueScalingGroup", namespace=namespace, part_of=name)
    groups = _by_name(_of(all_groups, root))
    group_uids = {obj["metadata"]["uid"] for obj in groups.values()}
    all_cliques = api.list_owned("PodClique", namespace=namespace, part_of=name)
    cliques = _by_name(_of(all_cliques, root | group_uids))
    clique_uids = {obj["metadata"]["uid"] for obj in cliques.values()}
    return Observed(
        groups=groups,
        cliques=cliques,
        pods=controlled(api, "Pod", pcs, clique_uids | root),
        gangs=_by_name(controlled(api, "PodGang", pcs, root)),
        deleting=[obj for obj in all_groups + all_cliques if obj["metadata"].get("deletionTimestamp")],
    )


def live_scale(observed: Observed, limits: Limits) -> LiveScale:
    """What ``kubectl scale`` or an HPA set on the live objects; a count beyond the limits is ignored (the
    template's applies) and said so, rather than creating a billion pods from one typo."""

    def counts(objects: dict[str, KubeObject], kind: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for name, obj in objects.items():
            value = (obj.get("spec") or {}).get("replicas")
            if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limits.replicas:
                found[name] = value
            else:
                log.warning(
                    "ignoring replicas kind=%s name=%s replicas=%r limit=%d", kind, name, value, limits.replicas
                )
        return found

    return LiveScale(
        groups=counts(observed.groups, "PodCliqueScalingGroup"), cliques=counts(observed.cliques, "PodClique")
    )
