"""Telling the user how a PodCliqueSet fared: its status subresource, and an Event when it is refused.

Status is written only when it differs from what is stored, and a refusal's Event only when the verdict changed,
so a steady cluster sees no writes and a broken PodCliqueSet does not flood its namespace with events.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from api.grove import GROVE_API_VERSION, ClusterTopologyBinding, PodCliqueSet
from scheduler.reconcile.client import KubeObject, ReconcileApi
from scheduler.reconcile.desired.state import Desired
from scheduler.reconcile.rules.fields import FieldError
from scheduler.reconcile.rules.immutability import SHAPE_STATUS_KEY, shape
from scheduler.reconcile.rules.topology import levels_condition
from scheduler.reconcile.status.conditions import Clock, condition, merge_conditions
from scheduler.reconcile.status.patch import status_patch
from scheduler.reconcile.status.podcliqueset import CONDITION_SPEC_VALID, pcs_status
from scheduler.reconcile.status.rollout import Rollout
from scheduler.reconcile.status.updates import pcs_update

__all__ = ["PodCliqueSetStatusReporter"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PodCliqueSetStatusReporter:
    api: ReconcileApi
    clock: Clock

    def accepted(
        self,
        raw: KubeObject,
        *,
        pcs: PodCliqueSet,
        desired: Desired,
        gangs: Mapping[str, KubeObject],
        pods_by_clique: Mapping[str, list[KubeObject]],
        podcliques: Mapping[str, KubeObject],
        groups: Mapping[str, KubeObject],
        rollout: Rollout,
        binding: ClusterTopologyBinding | None,
    ) -> int:
        """Write the status of a valid PodCliqueSet; returns the number of writes (0 or 1). ``podcliques`` and
        ``groups`` carry this pass's status; ``rollout`` is the update record as this pass leaves it."""
        status = pcs_status(
            name=pcs.metadata.name,
            generation=pcs.metadata.generation,
            replicas=max(pcs.spec.replicas, 0),
            desired=desired,
            podgangs=gangs,
            pods_by_clique=pods_by_clique,
        )
        status.update(_update_status(desired, podcliques=podcliques, groups=groups, rollout=rollout))
        status[SHAPE_STATUS_KEY] = shape(pcs)  # what later specs are held to (Grove's update rules)
        wanted = [condition(CONDITION_SPEC_VALID, "True", reason="Valid", message="")]
        if levels := levels_condition(pcs, binding):
            wanted.append(condition("TopologyLevelsUnavailable", levels[0], reason=levels[1], message=levels[2]))
        return self._patch(raw, status, wanted)

    def rejected(self, raw: KubeObject, errors: list[FieldError]) -> int:
        """Mark the PodCliqueSet invalid with every broken rule; post a Warning Event when the verdict is new."""
        message = "; ".join(str(error) for error in errors)
        meta = raw.get("metadata") or {}
        conditions = (raw.get("status") or {}).get("conditions") or []
        previous = [c for c in conditions if c.get("type") == CONDITION_SPEC_VALID]
        if not previous or previous[0].get("message") != message:
            involved = {
                "apiVersion": raw.get("apiVersion", GROVE_API_VERSION),
                "kind": "PodCliqueSet",
                "namespace": meta.get("namespace", ""),
                "name": meta.get("name", ""),
                "uid": meta.get("uid", ""),
            }
            self.api.record_event(involved=involved, reason="ValidationFailed", message=message, type="Warning")
            log.warning("invalid pcs=%s/%s errors=%s", meta.get("namespace"), meta.get("name"), message)
        wanted = [condition(CONDITION_SPEC_VALID, "False", reason="ValidationFailed", message=message)]
        generation = meta.get("generation")
        return self._patch(raw, {"observedGeneration": generation} if generation else {}, wanted)

    def _patch(self, raw: KubeObject, fields: KubeObject, wanted: list[KubeObject]) -> int:
        current = raw.get("status") or {}
        conditions = merge_conditions(current.get("conditions") or [], wanted, now=self.clock().isoformat())
        patch = status_patch(current, {**fields, "conditions": conditions})
        if patch is None:
            return 0
        meta = raw["metadata"]
        self.api.patch_podcliqueset_status(meta.get("namespace", ""), meta["name"], status=patch)
        return 1


def _update_status(
    desired: Desired, *, podcliques: Mapping[str, KubeObject], groups: Mapping[str, KubeObject], rollout: Rollout
) -> KubeObject:
    """``currentGenerationHash``, ``updatedReplicas`` and ``updateProgress`` with Grove's counts in it (the
    counts only once an update has begun, as in Grove)."""
    standalone: dict[int, list[str]] = {}
    hashes: dict[str, str] = {}
    for plan in desired.cliques().values():
        if plan.group is None:
            standalone.setdefault(plan.pcs_replica, []).append(plan.fqn)
            hashes[plan.fqn] = rollout.template_hashes[plan.template.name]
    scaling: dict[int, list[str]] = {}
    for group in desired.groups:
        scaling.setdefault(group.pcs_replica, []).append(group.fqn)
    updated, counts = pcs_update(
        generation=rollout.generation,
        template_hashes=hashes,
        standalone=standalone,
        groups=scaling,
        podcliques=podcliques,
        scaling_groups=groups,
    )
    status = rollout.status()
    status["updatedReplicas"] = updated
    if "updateProgress" in status:
        status["updateProgress"].update(counts)
    return status
