"""The planning step: a gang's members and the cluster's free capacity in, a solver ``Result`` out.

This is the one place the solver is called, and every input is explicit: the members bound (facts), the members
ready on their node and those whose planned node is kept (placed as far as this plan is concerned), the nodes
kube-scheduler refused per group, and other gangs' reservations. Placed members are left out of the request,
their capacity is taken, they count toward ``minReplicas``, and a ``required`` pack scope they belong to is held
to their domain. Every other pending member is planned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from api.grove import PodGangTopologyConstraint
from api.kube import Node, ResourceVector
from placement.request import ClusterView, GangRequest, GroupRequest, PackScope, Result, SolveOptions, Status
from scheduler.coordinator.members import GangMembers, GroupMembers
from scheduler.coordinator.topology_cache import TopologyCache
from scheduler.eligibility import eligible_nodes
from scheduler.state.store import ClusterStore

__all__ = ["PlanOutcome", "Solver", "plan_gang"]

Solver = Callable[[GangRequest, ClusterView, SolveOptions], Result]


@dataclass(frozen=True)
class PlanOutcome:
    result: Result
    demands: Mapping[str, ResourceVector] = field(default_factory=dict)  # pod → requests, for reservations
    groups: Mapping[str, str] = field(default_factory=dict)  # pod → group
    min_replicas: Mapping[str, int] = field(default_factory=dict)  # group → minReplicas


def plan_gang(
    *,
    members: GangMembers,
    bound: Mapping[str, str],
    ready: Mapping[str, str],
    kept: Mapping[str, str],
    excluded: Mapping[str, frozenset[str]],
    reserved: Mapping[str, Mapping[str, int]],
    store: ClusterStore,
    topologies: TopologyCache,
    solver: Solver,
    options: SolveOptions,
    only: str | None = None,
) -> PlanOutcome:
    """Plan the gang's pending members that are neither bound, ready nor kept, on what is free.

    ``bound`` maps members bound to their node (the store's, plus our own binds its watch has not shown yet);
    ``ready`` the members whose bind call arrived for their planned node; ``kept`` planned members that keep
    their node; ``excluded`` a group to the nodes kube-scheduler's own filters refused for it; ``reserved`` the
    capacity other gangs hold per node. With ``only``, just that pod is planned, as one required pod (a
    best-effort extra of a gang that already stands). Nodes, free capacity and topology come from ``store``.
    """
    nodes = {node.name: node for node in store.nodes()}
    topology = topologies.get(store)
    placed = {**kept, **ready}
    # Taken = bound pods (the store keeps the sum per node) + other gangs' reservations + our placed members
    # + members we bound that the store does not show bound yet.
    taken = store.used_by_node()
    for node_name, units in reserved.items():
        _add(taken.setdefault(node_name, {}), units)
    demands: dict[str, ResourceVector] = {}
    pod_groups: dict[str, str] = {}
    for group in members.groups:
        for pod in group.pods:
            pod_groups[pod.key] = group.name
            node = placed.get(pod.key) or (bound.get(pod.key) if not pod.spec.nodeName else None)
            if node:
                _add(taken.setdefault(node, {}), store.requests_of(pod))
    free = _free(store.allocatable_by_node(), taken)
    requests: list[GroupRequest] = []
    for group in members.groups:
        pending = [
            pod for pod in group.pending() if pod.key not in placed and pod.key not in bound and only in (None, pod.key)
        ]
        if not pending:
            continue
        for pod in pending:
            demands[pod.key] = store.requests_of(pod)
        done = sum(1 for pod in group.pods if pod.key in placed or pod.key in bound)
        passing = eligible_nodes(pending[0], nodes.values())
        eligible = (frozenset(nodes) if passing is None else passing) - excluded.get(group.name, frozenset())
        requests.append(
            GroupRequest(
                name=group.name,
                pods=tuple(pod.key for pod in pending),
                demand=_peak(demands[pod.key] for pod in pending),
                min_replicas=1 if only else max(0, group.min_replicas - done),
                eligible=frozenset(eligible),
            )
        )
    minimums = {group.name: group.min_replicas for group in members.groups}
    if not requests:
        return PlanOutcome(Result(status=Status.PLACED, placement_score=1.0), demands, pod_groups, minimums)
    scopes = _packs(members)
    requests = _hold_to_placed_domains(
        requests, scopes=scopes, members=members, placed={**bound, **placed}, nodes=nodes
    )
    planned = {request.name for request in requests}
    packs = tuple(
        PackScope(
            groups=tuple(g for g in scope.groups if g in planned), required=scope.required, preferred=scope.preferred
        )
        for scope in scopes
        if any(g in planned for g in scope.groups)
    )
    request = GangRequest(
        namespace=members.ref.namespace,
        name=members.ref.name,
        groups=tuple(requests),
        packs=packs,
        priority=_priority(members),
    )
    started = time.perf_counter()
    result = solver(request, ClusterView(topology=topology, free=free), options)
    if not result.solve_seconds:
        result = Result(
            status=result.status,
            assignment=result.assignment,
            placement_score=result.placement_score,
            objective_parts=result.objective_parts,
            bound=result.bound,
            solve_seconds=time.perf_counter() - started,
            reason=result.reason,
        )
    return PlanOutcome(result, demands, pod_groups, minimums)


def _free(allocatable: dict[str, ResourceVector], taken: Mapping[str, Mapping[str, int]]) -> dict[str, ResourceVector]:
    """allocatable − taken per node, floored at zero (as ``cluster_view.free_capacity``, on cached vectors:
    parsing every node's quantities on every plan would cost more than the solve)."""
    for name, vector in allocatable.items():
        for resource, units in taken.get(name, {}).items():
            if resource in vector:
                vector[resource] = max(0, vector[resource] - units)
    return allocatable


def _add(vector: ResourceVector, amount: Mapping[str, int]) -> None:
    for name, units in amount.items():
        vector[name] = vector.get(name, 0) + units


def _peak(vectors: Iterable[Mapping[str, int]]) -> dict[str, int]:
    # Pods of a group share a template; the per-resource maximum is safe if a hand-made one differs.
    peak: dict[str, int] = {}
    for vector in vectors:
        for name, units in vector.items():
            peak[name] = max(peak.get(name, 0), units)
    return peak


def _priority(members: GangMembers) -> int:
    for group in members.groups:
        for pod in group.pods:
            if pod.spec.priority is not None:
                return pod.spec.priority
    return 0


def _packs(members: GangMembers) -> list[PackScope]:
    """Every pack scope of the PodGang, over all its groups (planned or not)."""
    podgang = members.podgang
    if podgang is None:
        return []
    scopes: list[PackScope] = []

    def add(groups: list[str], constraint: PodGangTopologyConstraint) -> None:
        pack = constraint.packConstraint
        if pack is None or not groups or not (pack.required or pack.preferred):
            return
        scopes.append(PackScope(groups=tuple(groups), required=pack.required, preferred=pack.preferred))

    spec = podgang.spec
    every = [group.name for group in spec.podgroups]
    if spec.topologyConstraint is not None:
        add(every, spec.topologyConstraint)
    for config in spec.topologyConstraintGroupConfigs:
        if config.topologyConstraint is not None:
            add(list(config.podGroupNames), config.topologyConstraint)
    for group in spec.podgroups:
        if group.topologyConstraint is not None:
            add([group.name], group.topologyConstraint)
    return scopes


def _hold_to_placed_domains(
    requests: list[GroupRequest],
    *,
    scopes: list[PackScope],
    members: GangMembers,
    placed: Mapping[str, str],
    nodes: Mapping[str, Node],
) -> list[GroupRequest]:
    """A ``required`` scope with members already placed must stay in their domain: narrow eligibility to it."""
    by_name: dict[str, GroupMembers] = {group.name: group for group in members.groups}
    allowed: dict[str, set[str]] = {}
    for scope in scopes:
        if scope.required is None:
            continue
        placed_nodes = {
            placed.get(pod.key) or pod.spec.nodeName
            for name in scope.groups
            if name in by_name
            for pod in by_name[name].pods
            if pod.key in placed or (pod.spec.nodeName and not pod.terminal)
        }
        values = {_label(nodes.get(node), scope.required) for node in placed_nodes}
        if len(values) != 1:
            continue
        value = values.pop()
        domain = {name for name, node in nodes.items() if node.metadata.labels.get(scope.required) == value}
        for name in scope.groups:
            allowed[name] = allowed.get(name, domain) & domain
    if not allowed:
        return requests
    return [
        GroupRequest(
            name=request.name,
            pods=request.pods,
            demand=request.demand,
            min_replicas=request.min_replicas,
            eligible=(request.eligible or frozenset(nodes)) & frozenset(allowed[request.name]),
        )
        if request.name in allowed
        else request
        for request in requests
    ]


def _label(node: Node | None, key: str) -> str | None:
    return node.metadata.labels.get(key) if node is not None else None
