"""The planning step: a gang's members and the cluster's free capacity in, a solver ``Result`` out.

This is the one place the solver is called, and every input is explicit: the members bound (facts), the members
ready on their node and those whose planned node is kept (placed as far as this plan is concerned), the nodes
kube-scheduler refused per group, and other gangs' reservations. This module works out the free capacity (placed
members' capacity is taken); the request itself comes from the one translator, ``scheduler.gang_request``, which
``plan`` and the benchmarks use too: placed members are left out of it, count toward ``minReplicas`` and hold a
``required`` pack scope they belong to to their domain, and every other pending member is planned.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from api.kube import ResourceVector
from placement.request import ClusterView, GangRequest, Result, SolveOptions, Status
from scheduler.coordinator.members import SOLO_GROUP, GangMembers
from scheduler.coordinator.topology_cache import TopologyCache
from scheduler.gang_request import GangNotReady, gang_request, single_pod_request
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
    Raises ``GangRequestError`` (``GangNotReady`` while guaranteed members are missing or gated) as the translator
    does.
    """
    nodes = store.nodes()
    topology = topologies.get(store)
    placed = {**kept, **ready}
    # Taken = bound pods (the store keeps the sum per node) + other gangs' reservations + our placed members
    # + members we bound that the store does not show bound yet.
    taken = store.used_by_node()
    for node_name, units in reserved.items():
        _add(taken.setdefault(node_name, {}), units)
    pods = {pod.key: pod for group in members.groups for pod in group.pods}
    for key, pod in pods.items():
        node = placed.get(key) or (bound.get(key) if not pod.spec.nodeName else None)
        if node:
            _add(taken.setdefault(node, {}), store.requests_of(pod))
    free = _free(store.allocatable_by_node(), taken)
    # The one translator (scheduler.gang_request) turns the members into what is left to place; raises
    # GangRequestError for a PodGang that cannot be planned as it stands, GangNotReady while guaranteed members
    # are missing or gated.
    facts = {**bound, **placed}
    if members.podgang is None:
        (solo,) = members.groups[0].pods or (None,)
        if solo is None:
            raise GangNotReady(f"pod {members.ref.namespace}/{members.ref.name} does not exist")
        request = single_pod_request(
            solo, nodes, group=SOLO_GROUP, placed=facts, excluded=excluded, requests=store.requests_of
        )
    else:
        request = gang_request(
            members.podgang,
            pods,
            nodes,
            placed=facts,
            excluded=excluded,
            only=only,
            requests=store.requests_of,
        )
    demands = {key: store.requests_of(pods[key]) for group in request.groups for key in group.pods}
    pod_groups = {key: group.name for group in members.groups for key in (pod.key for pod in group.pods)}
    minimums = {group.name: group.min_replicas for group in members.groups}
    if not request.groups:
        return PlanOutcome(Result(status=Status.PLACED, placement_score=1.0), demands, pod_groups, minimums)
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
