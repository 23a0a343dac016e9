"""Check any :class:`~placement.request.Result` against its request and view, without the solver.

Written from the request and the view directly (not from the resolved problem the policies share), so a bug in
resolution or in the model shows up here instead of being agreed with. Every solver result in tests and
benchmarks goes through :func:`violations`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from placement.amounts import amount, quantity
from placement.problem import label_value
from placement.request import ClusterView, GangRequest, Result, Status

__all__ = ["batch_violations", "violations"]


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
    for node, resource, units, free in _overloaded(view, used):
        found.append(f"node {node} over capacity: {amount(resource, units)} placed, {quantity(resource, free)} free")
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


def batch_violations(
    requests: Sequence[GangRequest], view: ClusterView, results: Mapping[str, Result], head: Sequence[str]
) -> list[str]:
    """Everything wrong with a batch's results (``placement.batch``): each gang's result as :func:`violations`
    judges it, a result for every gang of the head and none for any other, and every node within its free
    units with all the started gangs on it together."""
    found: list[str] = []
    by_key = {request.key: request for request in requests}
    for key in head:
        if key not in results:
            found.append(f"gang {key} of the head has no result")
    for key, result in results.items():
        request = by_key.get(key)
        if request is None or key not in head:
            found.append(f"result for gang {key}, which is not in the head")
            continue
        found.extend(f"gang {key}: {line}" for line in violations(request, view, result))
    load: dict[str, Counter[str]] = {}
    for key, result in results.items():
        if key not in by_key:
            continue
        demand = {pod: group.demand for group in by_key[key].groups for pod in group.pods}
        for pod, node in result.assignment.items():
            on_node = load.setdefault(node, Counter())
            for resource, units in demand.get(pod, {}).items():
                on_node[resource] += units
    for node, resource, units, free in _overloaded(view, load):
        found.append(
            f"node {node} over capacity with the batch together: {amount(resource, units)}, "
            f"{quantity(resource, free)} free"
        )
    return found


def _overloaded(view: ClusterView, load: Mapping[str, Counter[str]]) -> list[tuple[str, str, int, int]]:
    """(node, resource, units placed, units free) wherever ``load`` exceeds the view's free units."""
    found = []
    for node, on_node in load.items():
        for resource, units in on_node.items():
            free = view.free.get(node, {}).get(resource, 0)
            if units > free:
                found.append((node, resource, units, free))
    return found
