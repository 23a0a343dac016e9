"""A brute-force placement oracle for tiny clusters: enumerate every count vector, keep the feasible ones, and
judge them by an objective evaluator of its own.

Feasibility and the objective are computed here from the raw request and view (labels, free units, eligible
sets), sharing no code with the model, the tier modules or the problem resolution, so agreement with ``solve``
means something.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from placement import ClusterView, GangRequest, GroupRequest
from topology import Level

HOSTNAME = "kubernetes.io/hostname"
GPU = "nvidia.com/gpu"

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


def _primary(request: GangRequest) -> str:
    demanded = sorted({r for g in request.groups for r, u in g.demand.items() if u > 0})
    if GPU in demanded:
        return GPU
    return "cpu" if "cpu" in demanded or not demanded else demanded[0]


def _whole_free(view: ClusterView, node: str, resource: str) -> bool:
    allocatable = view.topology.hosts[node].allocatable.get(resource, 0)
    return allocatable > 0 and view.free.get(node, {}).get(resource, 0) >= allocatable


def tiers(request: GangRequest, view: ClusterView, plan: Plan) -> tuple[int, ...]:
    """The objective of ``plan``, from the request, the labels and the free units alone: the same tiers as
    ``placement.objective`` (preferred misses; domains spanned per level below the host, narrowest first; wholly
    free NVLink domains and nodes broken into; best-effort pods missing; with shapes in the view, the GPUs they
    could not use), written without any of its code."""
    labels = {name: host.labels for name, host in view.topology.hosts.items()}
    levels = list(view.topology.levels)  # broad → narrow, the host last
    below_host = list(reversed(levels[:-1]))
    used = {(name, node) for name, counts in plan.items() for node, c in counts.items() if c > 0}
    nodes = {node for _, node in used}

    def domain(node: str, level: Level) -> str:
        return level.value_of(labels[node]) or f"alone:{node}"  # an unlabelled node is a domain of its own

    preferred = 0
    for pack in request.packs:
        if pack.preferred:
            values = {_label(view, n, pack.preferred) or f"alone:{n}" for name, n in used if name in pack.groups}
            preferred += max(0, len(values) - 1)
    spans = [len({domain(n, level) for n in nodes}) for level in below_host]
    primary = _primary(request)
    fresh = {n for n in view.topology.hosts if _whole_free(view, n, primary)}
    fresh_tiers = []
    nvlink = next((lv for lv in below_host if lv.name == "nvlink"), below_host[0] if below_host else None)
    if nvlink is not None:
        members: dict[str, set[str]] = {}
        for n in view.topology.hosts:
            value = nvlink.value_of(labels[n])
            if value:
                members.setdefault(value, set()).add(n)
        whole = {value for value, inside in members.items() if inside <= fresh}
        fresh_tiers.append(len({nvlink.value_of(labels[n]) for n in nodes} & whole))
    fresh_tiers.append(len(nodes & fresh))
    missing = sum(len(g.pods) - min(len(g.pods), sum(plan.get(g.name, {}).values())) for g in request.groups)
    future = (fragmented(view, plan, request),) if view.shapes else ()
    return (preferred, *spans, *fresh_tiers, missing, *future)


def plan_of(request: GangRequest, assignment: dict[str, str]) -> Plan:
    """Pods per node per group of a pod → node assignment (pods of no group ignored)."""
    plan: Plan = {g.name: {} for g in request.groups}
    for group in request.groups:
        for pod in group.pods:
            if pod in assignment:
                plan[group.name][assignment[pod]] = plan[group.name].get(assignment[pod], 0) + 1
    return plan


def fragmented(view: ClusterView, plan: Plan, request: GangRequest) -> int:
    """The future-fit tier, FGD-style per domain, recomputed from the shapes' definition: for each shape and
    each domain of its level, the domain's free GPUs count as fragmented when its nodes cannot give the shape its
    pods (⌈gpus / pod GPUs⌉, or all the domain holds when empty if that is fewer) of its size."""
    groups = {g.name: g for g in request.groups}
    used: dict[str, int] = {}
    for name, counts in plan.items():
        for node, c in counts.items():
            used[node] = used.get(node, 0) + c * groups[name].demand.get(GPU, 0)
    hosts = view.topology.hosts
    total = 0
    for shape in view.shapes:
        if not view.topology.has_level(shape.level):
            continue
        level = view.topology.level(shape.level)
        members: dict[str, list[str]] = {}
        for node, host in hosts.items():
            value = node if level is view.topology.levels[-1] else level.value_of(host.labels)
            if value:
                members.setdefault(value, []).append(node)
        for inside in members.values():
            free = {n: max(0, view.free.get(n, {}).get(GPU, 0)) - used.get(n, 0) for n in inside}
            whole = sum(hosts[n].allocatable.get(GPU, 0) // shape.pod_gpus for n in inside)
            needed = min(-(-shape.gpus // shape.pod_gpus), whole)
            pods = sum(f // shape.pod_gpus for f in free.values())
            if not (needed > 0 and pods >= needed):
                total += shape.weight * sum(free.values())
    return total
