"""PodClique and PodCliqueScalingGroup status, computed as Grove's controllers compute it (``reconcilestatus.go``).

PodClique: ``replicas`` (pods not terminating), ``readyReplicas``, ``scheduledReplicas`` (bound),
``scheduleGatedReplicas``, the update fields (``updates``), ``hpaPodSelector`` (standalone cliques: the selector an
HPA counts pods with), and conditions ``PodCliqueScheduled`` (scheduled ≥ minAvailable) and ``MinAvailableBreached``
(fewer than minAvailable scheduled, or scheduled minus pods failing or started-but-not-ready below it; Unknown while
its update is under way). PodCliqueScalingGroup: ``replicas``, ``scheduledReplicas`` and ``availableReplicas`` per
group replica, the update fields, ``selector``, and ``MinAvailableBreached`` when fewer than ``minAvailable`` group
replicas are free of a breach. Pure functions; ``writer`` writes them.

A scaling group whose PodCliques gang termination deleted carries ``GangTerminationInProgress`` until it is whole
again, so the same breach does not recycle it twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from api.grove import LABEL_PCSG, LABEL_PCSG_REPLICA_INDEX, LABEL_PODCLIQUE
from scheduler.reconcile.client import KubeObject
from scheduler.reconcile.desired.names import LABEL_MANAGED_BY, LABEL_PART_OF, MANAGED_BY, selector_string
from scheduler.reconcile.live import is_terminating, pod_is_bound, pod_is_ready
from scheduler.reconcile.status.conditions import condition, condition_of
from scheduler.reconcile.status.updates import UpdateTarget, pcsg_update, podclique_update, update_in_progress, updating

__all__ = ["BREACHED", "IN_PROGRESS", "SCHEDULED", "pcsg_status", "podclique_status"]

BREACHED = "MinAvailableBreached"
SCHEDULED = "PodCliqueScheduled"
IN_PROGRESS = "GangTerminationInProgress"


def _gated(pod: Mapping[str, Any]) -> bool:
    return bool(pod["spec"].get("schedulingGates")) and not pod["spec"].get("nodeName")


def _failing(pod: Mapping[str, Any]) -> bool:
    """Not ready, with a container that last exited non-zero (Grove's ``HasAnyContainerExitedErroneously``)."""
    status = pod.get("status") or {}
    statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    return any(((s.get("lastState") or {}).get("terminated") or {}).get("exitCode", 0) != 0 for s in statuses)


def _started_not_ready(pod: Mapping[str, Any]) -> bool:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return any(s.get("started") and not s.get("ready") for s in statuses)


def podclique_status(
    podclique: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], *, target: UpdateTarget, template_hash: str
) -> KubeObject:
    """The fields and conditions (without timestamps) the PodClique's status should hold; ``template_hash``: its
    clique template's current hash, which ``target`` says whether it may carry yet (``updates``)."""
    meta, spec = podclique["metadata"], podclique["spec"]
    live = [pod for pod in pods if not is_terminating(pod)]
    ready = [pod for pod in live if pod_is_ready(pod)]
    scheduled = sum(pod_is_bound(pod) for pod in live)
    minimum = int(spec.get("minAvailable") or 0)
    not_ready = [pod for pod in live if pod_is_bound(pod) and not pod_is_ready(pod)]
    ready_or_starting = scheduled - sum(_failing(pod) or _started_not_ready(pod) for pod in not_ready)
    status: KubeObject = {
        "observedGeneration": meta.get("generation"),
        "replicas": len(live),
        "readyReplicas": len(ready),
        "scheduledReplicas": scheduled,
        "scheduleGatedReplicas": sum(_gated(pod) for pod in live),
        **podclique_update(podclique, live, target=target, template_hash=template_hash),
    }
    labels = meta.get("labels") or {}
    if LABEL_PCSG not in labels:
        selector = {
            LABEL_MANAGED_BY: MANAGED_BY,
            LABEL_PART_OF: labels.get(LABEL_PART_OF, ""),
            LABEL_PODCLIQUE: meta["name"],
        }
        status["hpaPodSelector"] = selector_string(selector)
    if scheduled < minimum:
        schedule = condition(
            SCHEDULED,
            "False",
            reason="InsufficientScheduledPods",
            message=f"Insufficient scheduled pods. expected at least: {minimum}, found: {scheduled}",
        )
        breach = condition(
            BREACHED,
            "True",
            reason="ScheduledReplicasBelowMinAvailable",
            message=f"Scheduled replicas ({scheduled}) below MinAvailable ({minimum})",
        )
    else:
        schedule = condition(
            SCHEDULED,
            "True",
            reason="SufficientScheduledPods",
            message=f"Sufficient scheduled pods found. expected at least: {minimum}, found: {scheduled}",
        )
        if ready_or_starting < minimum:
            breach = condition(
                BREACHED,
                "True",
                reason="InsufficientReadyPods",
                message=f"Insufficient ready or starting pods. expected at least: {minimum}, "
                f"found: {ready_or_starting}",
            )
        else:
            breach = condition(
                BREACHED,
                "False",
                reason="SufficientReadyPods",
                message=f"Either sufficient ready or starting pods found. expected at least: {minimum}, "
                f"found: {ready_or_starting}",
            )
    if not target.on_delete and updating(status.get("updateProgress")):
        breach = update_in_progress(BREACHED)
    status["conditions"] = [schedule, breach]
    return status


def pcsg_status(
    pcsg: Mapping[str, Any],
    cliques: Iterable[Mapping[str, Any]],
    *,
    target: UpdateTarget,
    template_hashes: Mapping[str, str],
) -> KubeObject:
    """From the group's PodCliques (with their new status): per group replica, scheduled when every member is
    ``PodCliqueScheduled``, available when every member has ``readyReplicas ≥ minAvailable``; ``template_hashes``:
    each clique template's current hash, by clique name."""
    cliques = list(cliques)
    meta, spec = pcsg["metadata"], pcsg["spec"]
    replicas, minimum, names = int(spec.get("replicas") or 0), int(spec.get("minAvailable") or 1), spec["cliqueNames"]
    by_replica: dict[str, list[Mapping[str, Any]]] = {}
    for clique in cliques:
        if not is_terminating(clique):
            by_replica.setdefault(
                (clique["metadata"].get("labels") or {}).get(LABEL_PCSG_REPLICA_INDEX, ""), []
            ).append(clique)
    scheduled = healthy = 0
    available: list[bool] = []
    for index in range(replicas):
        members = by_replica.get(str(index), [])
        available.append(False)
        if len(members) != len(names):
            continue
        if all(_is_true(m, SCHEDULED) for m in members):
            scheduled += 1
            minimum_of = [int(m["spec"].get("minAvailable") or 0) for m in members]
            available[-1] = all(
                int(m["status"].get("readyReplicas", 0)) >= low for m, low in zip(members, minimum_of, strict=True)
            )
        healthy += not any(_is_true(m, BREACHED) for m in members)
    update = pcsg_update(pcsg, cliques, target=target, template_hashes=template_hashes, available=available)
    labels = meta.get("labels") or {}
    selector = {LABEL_MANAGED_BY: MANAGED_BY, LABEL_PART_OF: labels.get(LABEL_PART_OF, ""), LABEL_PCSG: meta["name"]}
    if healthy < minimum:
        breach = condition(
            BREACHED,
            "True",
            reason="InsufficientAvailablePodCliqueScalingGroupReplicas",
            message=f"PCSG replicas not in breach ({healthy}) below MinAvailable ({minimum})",
        )
    else:
        breach = condition(
            BREACHED,
            "False",
            reason="SufficientAvailablePodCliqueScalingGroupReplicas",
            message=f"PCSG replicas not in breach ({healthy}) meets MinAvailable ({minimum})",
        )
    if not target.on_delete and updating(update.get("updateProgress")):
        breach = update_in_progress(BREACHED)
    return {
        "observedGeneration": meta.get("generation"),
        "replicas": replicas,
        "scheduledReplicas": scheduled,
        "availableReplicas": sum(available),
        "selector": selector_string(selector),
        **update,
        "conditions": [breach],
    }


def _is_true(obj: Mapping[str, Any], type_: str) -> bool:
    found = condition_of(obj, type_)
    return found is not None and found.get("status") == "True"
