"""A PodCliqueSet's PodGangs, as Grove's PodCliqueSet controller keeps them (``components/podgang``, reference
§1–§2).

A gang is created with its members already listed (pods are created first, gated), then marked
``phase: Pending`` / ``Initialized=False`` exactly as Grove does at creation, and ``Initialized=True`` once every
PodClique has its ``replicas`` pods listed. Status writes carry the ``resourceVersion`` they were computed from,
and keep conditions others (the extender) wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from api.grove import PodCliqueSet
from scheduler.reconcile.client import KubeObject, ReconcileApi
from scheduler.reconcile.components.component import PassState
from scheduler.reconcile.components.converge import delete_orphans
from scheduler.reconcile.desired.gangs import normalised_spec, podgang_object
from scheduler.reconcile.desired.state import Desired, GangPlan
from scheduler.reconcile.rules.topology import topology_name
from scheduler.reconcile.status.conditions import Clock, condition, condition_of, merge_conditions

__all__ = ["PodGangs", "gang_initialized"]


@dataclass(frozen=True)
class PodGangs:
    api: ReconcileApi
    clock: Clock
    scheduler_name: str

    def sync(self, state: PassState) -> int:
        """Leaves the live PodGangs by name in ``state.gangs``."""
        state.gangs, writes = self._sync(
            state.pcs, desired=state.desired, live=state.observed.gangs, pods_by_clique=state.pods_by_clique
        )
        return writes

    def delete(self, *, namespace: str, pcs: str) -> int:
        return delete_orphans(self.api, "PodGang", namespace=namespace, pcs=pcs)

    def _sync(
        self,
        pcs: PodCliqueSet,
        *,
        desired: Desired,
        live: dict[str, KubeObject],
        pods_by_clique: Mapping[str, list[KubeObject]],
    ) -> tuple[dict[str, KubeObject], int]:
        """Delete unwanted gangs, create or update wanted ones; returns the live gangs by name and the writes."""
        writes = 0
        namespace = pcs.metadata.namespace
        wanted = {gang.name for gang in desired.gangs}
        for name in sorted(live.keys() - wanted):
            self.api.delete("PodGang", namespace=namespace, name=name)
            writes += 1
        topology = topology_name(pcs) if desired.topology_translated else None
        result: dict[str, KubeObject] = {}
        for gang in desired.gangs:
            obj = podgang_object(
                pcs=pcs,
                gang=gang,
                pods_by_clique=pods_by_clique,
                scheduler_name=self.scheduler_name,
                topology_name=topology,
            )
            current = live.get(gang.name)
            if current is None:
                current = self.api.create(obj)
                # As Grove: a new gang is Pending and not yet Initialized.
                pending = condition("Initialized", "False", reason="PodGangPodsCreationPending", message="")
                current = self._gang_status(current, {"phase": "Pending"}, pending)
                writes += 2
            elif _gang_differs(current, obj):
                current["spec"] = obj["spec"]
                current["metadata"]["labels"] = obj["metadata"]["labels"]
                current["metadata"]["annotations"] = obj["metadata"].get("annotations", {})
                current = self.api.replace(current)
                writes += 1
            initialized = gang_initialized(gang, current)
            wanted_condition = (
                condition("Initialized", "True", reason="PodGangPodsCreated", message="")
                if initialized
                else condition("Initialized", "False", reason="PodGangPodsCreationPending", message="")
            )
            if (condition_of(current, "Initialized") or {}).get("status") != wanted_condition["status"]:
                current = self._gang_status(current, {}, wanted_condition)
                writes += 1
            result[gang.name] = current
        return result, writes

    def _gang_status(self, gang: KubeObject, fields: KubeObject, wanted: KubeObject) -> KubeObject:
        status = dict(gang.get("status") or {})
        now = self.clock().isoformat()
        patch = {**fields, "conditions": merge_conditions(status.get("conditions") or [], [wanted], now=now)}
        if "phase" not in status and "phase" not in patch:
            patch["phase"] = "Pending"  # phase is required in PodGang status
        meta = gang["metadata"]
        return self.api.patch_status(
            "PodGang",
            namespace=meta["namespace"],
            name=meta["name"],
            status=patch,
            resource_version=meta["resourceVersion"],
        )


def _gang_differs(live: KubeObject, wanted: KubeObject) -> bool:
    live_meta, wanted_meta = live["metadata"], wanted["metadata"]
    same_spec: bool = normalised_spec(live["spec"]) == normalised_spec(wanted["spec"])
    return (
        not same_spec
        or (live_meta.get("labels") or {}) != wanted_meta["labels"]
        or (live_meta.get("annotations") or {}) != wanted_meta.get("annotations", {})
    )


def gang_initialized(gang: GangPlan, podgang: Mapping[str, Any]) -> bool:
    """Grove's rule: every PodClique of the gang has at least ``replicas`` pods listed in its PodGroup."""
    listed = {group["name"]: len(group.get("podReferences") or []) for group in podgang["spec"]["podgroups"]}
    return all(listed.get(clique.fqn, 0) >= clique.replicas for clique in gang.cliques)
