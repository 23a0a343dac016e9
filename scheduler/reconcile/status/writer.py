"""Writing PodClique and PodCliqueScalingGroup status, as Grove's PodClique and scaling-group controllers do after
their spec is synced (``reconcilestatus.go``).

Only what changed is written (conditions keep their ``lastTransitionTime`` unless their status flips, and
conditions others wrote are kept), so a steady cluster sees no status writes. Each write carries the
``resourceVersion`` the status was computed from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from api.grove import LABEL_PCS_REPLICA_INDEX, LABEL_PCSG
from scheduler.reconcile.client import KubeObject, ReconcileApi, StatusKind
from scheduler.reconcile.desired.state import CliquePlan
from scheduler.reconcile.status.cliques import BREACHED, IN_PROGRESS, pcsg_status, podclique_status
from scheduler.reconcile.status.conditions import Clock, condition_of, merge_conditions, stamp
from scheduler.reconcile.status.patch import status_patch
from scheduler.reconcile.status.rollout import Rollout

__all__ = ["StatusWriter", "write_clique_statuses"]


@dataclass(frozen=True)
class StatusWriter:
    """Writes a computed status onto an object's status subresource when it differs (conditions keep their
    ``lastTransitionTime`` unless their status flips, and conditions others wrote are kept)."""

    api: ReconcileApi
    clock: Clock

    def write(self, kind: StatusKind, obj: KubeObject, wanted: KubeObject) -> tuple[KubeObject, int]:
        current = obj.get("status") or {}
        conditions = merge_conditions(
            current.get("conditions") or [], wanted["conditions"], now=self.clock().isoformat()
        )
        patch = status_patch(current, {**wanted, "conditions": conditions})
        if patch is None:
            return obj, 0
        meta = obj["metadata"]
        updated = self.api.patch_status(
            kind,
            namespace=meta["namespace"],
            name=meta["name"],
            status=patch,
            resource_version=meta["resourceVersion"],
        )
        return updated, 1


def write_clique_statuses(
    writer: StatusWriter,
    *,
    groups: dict[str, KubeObject],
    podcliques: dict[str, KubeObject],
    pods: Mapping[str, list[KubeObject]],
    plans: Mapping[str, CliquePlan],
    rollout: Rollout,
) -> int:
    """Every PodClique's status, then every scaling group's (which reads its PodCliques'); ``groups`` and
    ``podcliques`` are updated in place to the written objects, for what reads them later in the pass; ``plans``:
    the desired PodCliques by name; ``rollout``: the PodCliqueSet's update record. Returns the writes issued."""
    writes = 0
    now = stamp(writer.clock())
    for name, clique in podcliques.items():
        plan = plans[name]
        wanted = podclique_status(
            clique,
            pods.get(name, []),
            target=rollout.target(plan.pcs_replica, now=now),
            template_hash=rollout.template_hashes[plan.template.name],
        )
        podcliques[name], written = writer.write("PodClique", clique, wanted)
        writes += written
    members: dict[str, list[KubeObject]] = {}
    for clique in podcliques.values():
        if group := (clique["metadata"].get("labels") or {}).get(LABEL_PCSG):
            members.setdefault(group, []).append(clique)
    for name, group in groups.items():
        replica = int((group["metadata"].get("labels") or {}).get(LABEL_PCS_REPLICA_INDEX, -1))
        wanted = pcsg_status(
            group,
            members.get(name, []),
            target=rollout.target(replica, now=now),
            template_hashes=rollout.template_hashes,
        )
        breached = next(c for c in wanted["conditions"] if c["type"] == BREACHED)
        in_progress = condition_of(group, IN_PROGRESS)
        if breached["status"] == "False" and in_progress is not None:
            # The recycled group is whole again: Grove drops the marker that kept it from being recycled twice.
            current = [c for c in (group.get("status") or {}).get("conditions") or [] if c.get("type") != IN_PROGRESS]
            group = {**group, "status": {**(group.get("status") or {}), "conditions": current}}
        groups[name], written = writer.write("PodCliqueScalingGroup", group, wanted)
        writes += written
    return writes
