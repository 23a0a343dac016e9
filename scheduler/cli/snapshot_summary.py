"""What a snapshot holds, as plain data: capacity, free GPUs per topology domain, bound pods, pending gangs.

The shape of ``summarise()`` is the documented ``snapshot inspect --json`` output (see ``SUMMARY_VERSION``);
change it only by adding keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from api.core import Pod
from api.grove import LABEL_PODGANG
from placement.request import ClusterView
from scheduler.extender.translation.cluster_view import holds_capacity, snapshot_view
from scheduler.extender.translation.gang_request import GangRequestError, gang_request
from scheduler.snapshot import Snapshot
from topology.graph import GPU_RESOURCE

__all__ = ["SUMMARY_VERSION", "summarise"]

SUMMARY_VERSION = 2
"""``snapshot inspect --json`` shape, version 2 (version 1 also had "ignored_kinds": such kinds are now refused)::

    {"version": 2,
     "nodes": int, "unschedulable_nodes": int,
     "gpus": {"total": int, "free": int},
     "levels": [{"name": str, "keys": [str]}],                 # broad → narrow, ends with "host"
     "domains": {level: [{"domain": str, "nodes": int, "gpus_total": int, "gpus_free": int}]},
                                                               # every level but "host"; "<unknown>" = unlabelled
     "bound_pods": int,
     "pending_gangs": [{"gang": "ns/name", "podgang": bool, "groups": int, "pods": int, "min_pods": int,
                        "gated_pods": int, "gpus": int | null, "min_gpus": int | null, "error": str | null}],
     "pending_pods_without_gang": int}
"""


def _gang_entry(*, key: str, podgang: bool, pods: int, gpus: int) -> dict[str, Any]:
    return {
        "gang": key,
        "podgang": podgang,
        "groups": 1,
        "pods": pods,
        "min_pods": pods,
        "gated_pods": 0,
        "gpus": gpus,
        "min_gpus": gpus,
        "error": None,
    }


def _pending_gangs(snapshot: Snapshot) -> tuple[list[dict[str, Any]], int]:
    pods = {pod.key: pod for pod in snapshot.pods}
    waiting = {key for key, pod in pods.items() if not pod.spec.nodeName and not pod.terminal}
    entries: list[dict[str, Any]] = []
    covered: set[str] = set()
    for gang in snapshot.podgangs:
        refs = gang.member_keys()
        covered.update(refs)
        # Pending: some member still waits for a node, or is referenced but not created yet.
        if not any(ref in waiting or ref not in pods for ref in refs):
            continue
        entry = _gang_entry(key=gang.key, podgang=True, pods=len(refs), gpus=0)
        entry["groups"] = len(gang.spec.podgroups)
        entry["gated_pods"] = sum(1 for ref in refs if ref in pods and pods[ref].gated)
        try:
            request = gang_request(gang, pods, snapshot.nodes, gated=True, classes=snapshot)
        except GangRequestError as err:
            entry.update(min_pods=sum(g.minReplicas for g in gang.spec.podgroups), gpus=None, min_gpus=None)
            entry["error"] = str(err)
        else:
            entry["min_pods"] = sum(group.min_replicas for group in request.groups)
            entry["gpus"] = sum(g.demand.get(GPU_RESOURCE, 0) * len(g.pods) for g in request.groups)
            entry["min_gpus"] = sum(g.demand.get(GPU_RESOURCE, 0) * g.min_replicas for g in request.groups)
        entries.append(entry)
    # Pods that name a gang no PodGang object describes (yet): summarise them from the pods themselves.
    orphans: dict[str, list[Pod]] = {}
    loose = 0
    for key in sorted(waiting - covered):
        pod = pods[key]
        gang_name = pod.metadata.labels.get(LABEL_PODGANG)
        if gang_name:
            orphans.setdefault(f"{pod.metadata.namespace}/{gang_name}", []).append(pod)
        else:
            loose += 1
    for gang_key, members in sorted(orphans.items()):
        gpus = sum(pod.requests().get(GPU_RESOURCE, 0) for pod in members)
        entry = _gang_entry(key=gang_key, podgang=False, pods=len(members), gpus=gpus)
        entry["gated_pods"] = sum(1 for pod in members if pod.gated)
        entry["error"] = f"no PodGang {gang_key} in the snapshot"
        entries.append(entry)
    return sorted(entries, key=lambda e: e["gang"]), loose


def _domains(view: ClusterView) -> dict[str, list[dict[str, Any]]]:
    topology = view.topology
    free = topology.free_per_domain
    result: dict[str, list[dict[str, Any]]] = {}
    for level in topology.levels[:-1]:
        total = free(level.name, {name: host.allocatable for name, host in topology.hosts.items()})
        available = free(level.name, view.free)
        result[level.name] = [
            {"domain": domain, "nodes": len(nodes), "gpus_total": total[domain], "gpus_free": available[domain]}
            for domain, nodes in sorted(topology.domains(level.name).items())
        ]
    return result


def summarise(
    snapshot: Snapshot,
    *,
    levels_file: str | Path | None = None,
    view: ClusterView | None = None,
) -> dict[str, Any]:
    """The inspect summary; ``view`` may be passed when the caller built it already."""
    view = view or snapshot_view(snapshot, levels_file=levels_file)
    free: Mapping[str, Mapping[str, int]] = view.free
    pending, loose = _pending_gangs(snapshot)
    return {
        "version": SUMMARY_VERSION,
        "nodes": len(snapshot.nodes),
        "unschedulable_nodes": sum(1 for node in snapshot.nodes if node.spec.unschedulable),
        "gpus": {
            "total": sum(node.allocatable().get(GPU_RESOURCE, 0) for node in snapshot.nodes),
            "free": sum(units.get(GPU_RESOURCE, 0) for units in free.values()),
        },
        "levels": [{"name": level.name, "keys": list(level.keys)} for level in view.topology.levels],
        "domains": _domains(view),
        "bound_pods": sum(1 for pod in snapshot.pods if holds_capacity(pod)),
        "pending_gangs": pending,
        "pending_pods_without_gang": loose,
    }
