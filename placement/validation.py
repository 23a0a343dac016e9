"""Check any :class:`~placement.request.Result` against its request and view, without the solver.

Written from the request and the view directly (not from the resolved problem the policies share), so a bug in
resolution or in the model shows up here instead of being agreed with. Every solver result in tests and
benchmarks goes through :func:`violations`.
"""

from __future__ import annotations

from collections import Counter

from placement.problem import label_value
from placement.request import ClusterView, GangRequest, Result, Status

__all__ = ["violations"]


def violations(
    request: GangRequest,
    view: ClusterView,
    result: Result,
    *,
    partial_ok: bool = False,
    packs_ok: bool = False,
) -> list[str]:
    """Everything wrong with ``result``; empty when it is sound.

    ``partial_ok``: a non-placed result may still carry an assignment (pod-by-pod baselines).
    ``packs_ok``: pack constraints are not checked (topology-blind baselines ignore them by design).
    """
    found: list[str] = []
    group_of = {pod: group for group in request.groups for pod in group.pods}
    hosts = view.topology.hosts
    used: dict[str, Counter[str]] = {}
    for pod, node in result.assignment.items():
        group = group_of.get(pod)
        if group is None:
            found.append(f"pod {pod} is not in gang {request.key}")
            continue
        if node not in hosts:
            found.append(f"pod {pod} placed on unknown node {node}")
            continue
        if group.eligible is not None and node not in group.eligible:
            found.append(f"pod {pod} of group {group.name} placed on ineligible node {node}")
        load = used.setdefault(node, Counter())
        for resource, units in group.demand.items():
            load[resource] += units
    for node, load in used.items():
        for resource, units in load.items():
            free = view.free.get(node, {}).get(resource, 0)
            if units > free:
                found.append(f"node {node} over capacity: {units} {resource} placed, {free} free")
    placed = Counter(group_of[p].name for p in result.assignment if p in group_of)
    if result.status == Status.PLACED:
        for group in request.groups:
            if placed[group.name] < group.min_replicas:
                found.append(
                    f"group {group.name} placed {placed[group.name]} pods, below minReplicas {group.min_replicas}"
                )
        if result.placement_score is None or not 0 < result.placement_score <= 1:
            found.append(f"placementScore {result.placement_score} is not in (0, 1]")
    elif result.assignment and not partial_ok:
        found.append(f"status {result.status} but {len(result.assignment)} pods assigned (partial gang)")
    if result.status != Status.PLACED and not result.reason:
        found.append(f"status {result.status} without a reason")
    if not packs_ok:
        found.extend(_pack_violations(request, view, result))
    return found


def _pack_violations(request: GangRequest, view: ClusterView, result: Result) -> list[str]:
    found: list[str] = []
    hosts = view.topology.hosts
    for index, pack in enumerate(request.packs):
        if pack.required is None:
            continue
        scope = {pod for group in request.groups if group.name in pack.groups for pod in group.pods}
        values: set[str | None] = set()
        for pod, node in result.assignment.items():
            if pod in scope and node in hosts:
                values.add(label_value(hosts[node].labels, key=pack.required, node=node))
        if None in values:
            found.append(f"packs[{index}]: a pod sits on a node without label {pack.required}")
        if len(values - {None}) > 1:
            found.append(f"packs[{index}]: required {pack.required} spans {sorted(v for v in values if v)}")
    return found
