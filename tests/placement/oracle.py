"""A brute-force placement oracle for tiny clusters: enumerate every count vector, keep the feasible ones.

Feasibility is checked here from the raw request and view (labels, free units, eligible sets), sharing no
code with the model or the problem resolution, so agreement with ``solve`` means something.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from placement import ClusterView, GangRequest, GroupRequest

HOSTNAME = "kubernetes.io/hostname"

Plan = dict[str, dict[str, int]]  # group name → node → pods


def _vectors(total_max: int, total_min: int, slots: int) -> Iterator[tuple[int, ...]]:
    for vector in itertools.product(range(total_max + 1), repeat=slots):
        if total_min <= sum(vector) <= total_max:
            yield vector


def _label(view: ClusterView, node: str, key: str) -> str | None:
    value = view.topology.hosts[node].labels.get(key)
    if not value and key == HOSTNAME:
        return node
    return value or None


def _group_ok(view: ClusterView, group: GroupRequest, counts: dict[str, int]) -> bool:
    return all(group.eligible is None or node in group.eligible for node, c in counts.items() if c > 0)


def feasible(request: GangRequest, view: ClusterView, plan: Plan) -> bool:
    groups = {g.name: g for g in request.groups}
    for node in view.topology.hosts:
        load: dict[str, int] = {}
        for name, counts in plan.items():
            for resource, units in groups[name].demand.items():
                load[resource] = load.get(resource, 0) + units * counts.get(node, 0)
        if any(units > view.free.get(node, {}).get(resource, 0) for resource, units in load.items()):
            return False
    for pack in request.packs:
        if pack.required is None:
            continue
        values = {_label(view, node, pack.required) for name in pack.groups for node, c in plan[name].items() if c > 0}
        if None in values or len(values) > 1:
            return False
    return all(_group_ok(view, groups[name], counts) for name, counts in plan.items())


def all_plans(request: GangRequest, view: ClusterView) -> Iterator[Plan]:
    """Every feasible plan (each group between minReplicas and all its pods)."""
    nodes = sorted(view.topology.hosts)
    per_group = [
        [dict(zip(nodes, v, strict=True)) for v in _vectors(len(g.pods), g.min_replicas, len(nodes))]
        for g in request.groups
    ]
    for combination in itertools.product(*per_group):
        plan = {g.name: counts for g, counts in zip(request.groups, combination, strict=True)}
        if feasible(request, view, plan):
            yield plan


def to_assignment(request: GangRequest, plan: Plan) -> dict[str, str]:
    assignment: dict[str, str] = {}
    for group in request.groups:
        pods = iter(group.pods)
        for node, count in sorted(plan[group.name].items()):
            for _ in range(count):
                assignment[next(pods)] = node
    return assignment
