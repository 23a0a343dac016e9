"""The update fields of PodClique, PodCliqueScalingGroup and PodCliqueSet status, computed as Grove computes them.

- PodClique (``podclique/reconcilestatus.go``, ``reconcilespec.go: processUpdate``): ``updatedReplicas``, the pods
  carrying the hash it is converging to; ``updateProgress`` {``updateStartedAt``, ``updateEndedAt``,
  ``podCliqueSetGenerationHash``, ``podTemplateHash``}, started when a PodClique made for an older generation takes
  the new one (its PCS replica's turn, or at once under OnDelete, already ended then) and ended once none of its
  pods is of an older template and ``minAvailable`` of them are ready again; ``currentPodTemplateHash`` and
  ``currentPodCliqueSetGenerationHash`` once it is not updating and every pod is updated. A PodClique created for
  the current generation needs no update and gets no progress.
- PodCliqueScalingGroup (``podcliquescalinggroup/reconcilestatus.go``, ``reconcilespec.go``): ``updatedReplicas``
  (group replicas available with every PodClique updated), ``updateProgress`` {``updateStartedAt``,
  ``updateEndedAt``, ``podCliqueSetGenerationHash``, ``updatedPodCliquesCount``, ``totalPodCliquesCount``} and
  ``currentPodCliqueSetGenerationHash`` once every PodClique of it has converged.
- PodCliqueSet (``podcliqueset/reconcilestatus.go``): ``updatedReplicas`` (replicas available and wholly updated)
  and, while it has an ``updateProgress``, ``updatedPodCliquesCount``/``totalPodCliquesCount`` (standalone
  PodCliques) and ``updatedPodCliqueScalingGroupsCount``/``totalPodCliqueScalingGroupsCount``.

While a PodClique's or scaling group's own update is under way, Grove reports its ``MinAvailableBreached`` as
Unknown (``update_in_progress``), so gang termination never recycles what the update is replacing. Pure functions;
``cliques`` and ``reporting`` put them into the status they write. Grove's pod-by-pod bookkeeping
(``readyPodsSelectedToUpdate``, ``readyReplicaIndicesSelectedToUpdate``) is not kept: the reconciler replaces a
replica's gangs whole (``components.pod``), not one pod or one group replica at a time.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from api.grove import LABEL_TEMPLATE_HASH
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.live import is_terminating
from scheduler.reconcile.status.conditions import condition

__all__ = [
    "UpdateTarget",
    "clique_available",
    "group_available",
    "group_updated",
    "member_name",
    "pcs_update",
    "pcsg_update",
    "podclique_update",
    "podclique_updated",
    "update_in_progress",
    "updating",
]


def update_in_progress(type_: str) -> KubeObject:
    """The condition Grove reports in place of ``type_`` while an update is under way."""
    return condition(type_, "Unknown", reason="UpdateInProgress", message="Update is in progress")


@dataclass(frozen=True)
class UpdateTarget:
    """What one object's update fields are computed against in a pass."""

    generation: str  # the PodCliqueSet's current generation hash
    eligible: bool  # it may take the current template now (``Rollout.takes_template`` of its PCS replica)
    rolling: bool  # a RollingRecreate update of the PodCliqueSet is under way
    on_delete: bool
    now: str  # a metav1.Time


def updating(progress: Mapping[str, Any] | None) -> bool:
    """Grove's ``IsPCLQAutoUpdateInProgress`` / ``IsPCSGUpdateInProgress``: started and not ended."""
    return progress is not None and not progress.get("updateEndedAt")


def _hash(obj: Mapping[str, Any]) -> str:
    return str((obj["metadata"].get("labels") or {}).get(LABEL_TEMPLATE_HASH, ""))


def _min_available(podclique: Mapping[str, Any]) -> int:
    return int((podclique.get("spec") or {}).get("minAvailable") or 0)


def podclique_update(
    podclique: Mapping[str, Any], live: Sequence[Mapping[str, Any]], *, target: UpdateTarget, template_hash: str
) -> KubeObject:
    """The update fields of a PodClique's status; ``live``: its pods that are not terminating; ``template_hash``:
    its clique template's current hash."""
    status = podclique.get("status") or {}
    label = _hash(podclique)
    found = status.get("updateProgress")
    progress: KubeObject | None = copy.deepcopy(found) if isinstance(found, dict) else None
    current = status.get("currentPodCliqueSetGenerationHash")
    # Grove's shouldResetOrTriggerUpdate, less its first-sight case (a PodClique made for this generation).
    stale_generation = (progress is None and current is not None and current != target.generation) or (
        progress is not None and progress.get("podCliqueSetGenerationHash") != target.generation
    )
    if target.eligible and stale_generation:
        progress = {
            "updateStartedAt": target.now,
            "podCliqueSetGenerationHash": target.generation,
            "podTemplateHash": template_hash,
        }
        if target.on_delete:
            progress["updateEndedAt"] = target.now
    goal = str(progress["podTemplateHash"]) if progress is not None else label
    updated = sum(_hash(pod) == goal for pod in live)
    if updating(progress) and progress is not None:
        ready = sum(_ready(pod) for pod in live)
        if updated == len(live) and ready >= _min_available(podclique):
            progress["updateEndedAt"] = target.now
    fields: KubeObject = {"updatedReplicas": updated}
    if progress is not None:
        fields["updateProgress"] = progress
    if not updating(progress) and updated == len(live):  # Grove's mutateCurrentHashes
        if progress is None and label and label == template_hash:
            fields["currentPodTemplateHash"] = template_hash
            fields["currentPodCliqueSetGenerationHash"] = target.generation
        elif progress is not None:
            fields["currentPodTemplateHash"] = progress["podTemplateHash"]
            fields["currentPodCliqueSetGenerationHash"] = progress["podCliqueSetGenerationHash"]
    return fields


def _ready(pod: Mapping[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def podclique_updated(podclique: Mapping[str, Any], *, template_hash: str, generation: str) -> bool:
    """Grove's ``isStandalonePCLQUpdated`` / ``isPCSGChildPCLQUpdated``: on the current template, converged to the
    current generation, and at least ``minAvailable`` pods updated and ready."""
    if is_terminating(podclique):
        return False
    status = podclique.get("status") or {}
    minimum = _min_available(podclique)
    return bool(
        template_hash
        and _hash(podclique) == template_hash
        and status.get("currentPodTemplateHash") == template_hash
        and status.get("currentPodCliqueSetGenerationHash") == generation
        and int(status.get("readyReplicas") or 0) >= minimum
        and int(status.get("updatedReplicas") or 0) >= minimum
    )


def member_name(pcsg: str, replica: int, clique: str) -> str:
    """A scaling group's PodClique: ``<pcsg-fqn>-<i>-<clique>``."""
    return f"{pcsg}-{replica}-{clique}"


def pcsg_update(
    pcsg: Mapping[str, Any],
    members: Iterable[Mapping[str, Any]],
    *,
    target: UpdateTarget,
    template_hashes: Mapping[str, str],
    available: Sequence[bool],
) -> KubeObject:
    """The update fields of a scaling group's status, from its PodCliques (with this pass's status);
    ``template_hashes``: by clique name; ``available``: whether each group replica is available."""
    meta, spec, status = pcsg["metadata"], pcsg["spec"], pcsg.get("status") or {}
    names, replicas = list(spec.get("cliqueNames") or []), int(spec.get("replicas") or 0)
    by_name = {m["metadata"]["name"]: m for m in members if not is_terminating(m)}
    expected = {
        member_name(meta["name"], index, clique): template_hashes.get(clique, "")
        for index in range(replicas)
        for clique in names
    }
    found = status.get("updateProgress")
    progress: KubeObject | None = copy.deepcopy(found) if isinstance(found, dict) else None
    # Grove's processUpdate: started with its PCS replica's turn (at once, and already ended, under OnDelete).
    if (target.on_delete or (target.rolling and target.eligible)) and (
        progress is None or progress.get("podCliqueSetGenerationHash") != target.generation
    ):
        progress = {"updateStartedAt": target.now, "podCliqueSetGenerationHash": target.generation}
        if target.on_delete:
            progress["updateEndedAt"] = target.now

    def updated(name: str) -> bool:
        member = by_name.get(name)
        return member is not None and podclique_updated(
            member, template_hash=expected[name], generation=target.generation
        )

    updated_members = sum(updated(name) for name in expected)
    if updating(progress) and progress is not None and updated_members == len(expected):
        progress["updateEndedAt"] = target.now
    fields: KubeObject = {
        "updatedReplicas": sum(
            available[index] and all(updated(member_name(meta["name"], index, c)) for c in names)
            for index in range(min(replicas, len(available)))
        )
    }
    if progress is not None:
        fields["updateProgress"] = {
            **progress,
            "updatedPodCliquesCount": updated_members,
            "totalPodCliquesCount": len(expected),
        }
    converged = all(
        (member := by_name.get(name)) is not None
        and _hash(member) == hash_
        and (member.get("status") or {}).get("currentPodTemplateHash") == hash_
        and (member.get("status") or {}).get("currentPodCliqueSetGenerationHash") == target.generation
        for name, hash_ in expected.items()
    )
    if converged and not updating(progress):  # Grove's mutateCurrentPodCliqueSetGenerationHash
        fields["currentPodCliqueSetGenerationHash"] = target.generation
    return fields


def pcs_update(
    *,
    generation: str,
    template_hashes: Mapping[str, str],
    standalone: Mapping[int, Sequence[str]],
    groups: Mapping[int, Sequence[str]],
    podcliques: Mapping[str, Mapping[str, Any]],
    scaling_groups: Mapping[str, Mapping[str, Any]],
) -> tuple[int, KubeObject]:
    """``updatedReplicas`` and the ``updateProgress`` counts of a PodCliqueSet (Grove's
    ``computeAvailableAndUpdatedReplicas``). ``standalone``/``groups``: the expected standalone PodCliques and
    scaling groups of each PCS replica, by name; ``template_hashes``: the current hash of each standalone PodClique,
    by its name; ``podcliques``/``scaling_groups``: the live ones, with this pass's status."""
    updated_replicas = updated_cliques = total_cliques = updated_groups = total_groups = 0
    for replica in sorted(set(standalone) | set(groups)):
        cliques = [podcliques.get(name) for name in standalone.get(replica, ())]
        scaled = [scaling_groups.get(name) for name in groups.get(replica, ())]
        total_cliques += len(cliques)
        total_groups += len(scaled)
        done_cliques = [
            c is not None and podclique_updated(c, template_hash=template_hashes.get(name, ""), generation=generation)
            for name, c in zip(standalone.get(replica, ()), cliques, strict=True)
        ]
        done_groups = [g is not None and group_updated(g, generation) for g in scaled]
        updated_cliques += sum(done_cliques)
        updated_groups += sum(done_groups)
        available = all(c is not None and not is_terminating(c) and clique_available(c) for c in cliques) and all(
            g is not None and not is_terminating(g) and group_available(g) for g in scaled
        )
        updated_replicas += available and all(done_cliques) and all(done_groups)
    counts = {
        "updatedPodCliquesCount": updated_cliques,
        "totalPodCliquesCount": total_cliques,
        "updatedPodCliqueScalingGroupsCount": updated_groups,
        "totalPodCliqueScalingGroupsCount": total_groups,
    }
    return updated_replicas, counts


def group_updated(group: Mapping[str, Any], generation: str) -> bool:
    """Grove's ``IsPCSGUpdateComplete``."""
    return not is_terminating(group) and (group.get("status") or {}).get("currentPodCliqueSetGenerationHash") == (
        generation
    )


def clique_available(podclique: Mapping[str, Any]) -> bool:
    """At least ``minAvailable`` Ready pods (the part of Grove's ``computePCLQsStatus`` for one PodClique)."""
    return int((podclique.get("status") or {}).get("readyReplicas") or 0) >= _min_available(podclique)


def group_available(group: Mapping[str, Any]) -> bool:
    """At least ``minAvailable`` available group replicas (Grove's ``computePCSGsStatus`` for one group)."""
    status, spec = group.get("status") or {}, group.get("spec") or {}
    return int(status.get("availableReplicas") or 0) >= int(spec.get("minAvailable") or 1)
