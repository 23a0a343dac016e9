"""The solving step of a plan: a gang's members and the cluster's free capacity in, a solver ``Result`` out.

This is the one place the solver is called, and every input is explicit: the members bound (facts), the members ready on
their node and those whose planned node is kept (placed as far as this plan is concerned), the nodes kube-scheduler
refused per group, and other gangs' reservations. This module works out the free capacity (placed members' capacity is
taken); the request itself comes from the one translator, ``scheduler.extender.translation.gang_request``, which
``plan`` and the benchmarks use too: placed members are left out of it, count toward ``minReplicas`` and hold a
``required`` pack scope they belong to to their domain, and every other pending member is planned.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import cast

from api.core import ResourceVector
from placement.request import ClusterView, GangRequest, Result, SolveOptions, Status
from scheduler.extender.coordinator.eligibility_cache import EligibilityCache
from scheduler.extender.coordinator.members import SOLO_GROUP, GangMembers
from scheduler.extender.coordinator.topology_cache import TopologyCache
from scheduler.extender.state.store import ClusterStore
from scheduler.extender.translation.gang_request import GangNotReady, gang_request, single_pod_request

__all__ = ["PlanOutcome", "Solver", "Translated", "free_capacity", "plan_gang", "translate"]

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
    eligibility: EligibilityCache | None = None,
) -> PlanOutcome:
    """Plan the gang's pending members that are neither bound, ready nor kept, on what is free.

    ``bound`` maps members bound to their node (the store's, plus our own binds its watch has not shown yet);
    ``ready`` the members whose bind call arrived for their planned node; ``kept`` planned members that keep
    their node; ``excluded`` a group to the nodes kube-scheduler's own filters refused for it; ``reserved`` the
    capacity other gangs hold per node. With ``only``, just that pod is planned, as one required pod (a
    best-effort extra of a gang that already stands). Nodes, free capacity and topology come from ``store``;
    ``eligibility`` keeps which nodes a pod may run on while they do not change.
    Raises ``GangRequestError`` (``GangNotReady`` while guaranteed members are missing or gated) as the translator
    does.
    """
    placed = {**kept, **ready}
    # Translated first: a gang still gathering (most plans asked for in Grove's flow, one per member's arrival and
    # gate lifted) is refused here, before the free capacity is worked out for nothing.
    gang = translate(
        members=members, facts={**bound, **placed}, excluded=excluded, store=store, only=only, eligibility=eligibility
    )
    free = free_capacity(store=store, reserved=reserved, members=members, placed=placed, bound=bound)
    request, demands, pod_groups, minimums = gang.request, gang.demands, gang.groups, gang.min_replicas
    if not request.groups:
        return PlanOutcome(Result(status=Status.PLACED, placement_score=1.0), demands, pod_groups, minimums)
    started = time.perf_counter()
    result = solver(request, ClusterView(topology=topologies.get(store), free=free, replaced=True), options)
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


@dataclass(frozen=True)
class Translated:
    """A gang's request as the one translator gives it, with what a commit of its plan records."""

    request: GangRequest
    demands: Mapping[str, ResourceVector]  # pod → requests, for the pods the request plans
    groups: Mapping[str, str]  # pod → group, every member
    min_replicas: Mapping[str, int]  # group → minReplicas


def translate(
    *,
    members: GangMembers,
    facts: Mapping[str, str],
    excluded: Mapping[str, frozenset[str]],
    store: ClusterStore,
    only: str | None = None,
    eligibility: EligibilityCache | None = None,
) -> Translated:
    """The request for what is left of the gang, through the one translator
    (``scheduler.extender.translation.gang_request``). ``facts``: members bound or placed, to their node. Raises
    ``GangRequestError`` for a PodGang that cannot be planned as it stands, ``GangNotReady`` while guaranteed members
    are missing or gated. ``eligibility``: answers kept while the store's Nodes do not change (else every node is
    judged)."""
    nodes, eligible = eligibility.nodes(store) if eligibility is not None else (store.nodes(), None)
    pods = {pod.key: pod for group in members.groups for pod in group.pods}
    if members.podgang is None:
        (solo,) = members.groups[0].pods or (None,)
        if solo is None:
            raise GangNotReady(f"pod {members.ref.namespace}/{members.ref.name} does not exist")
        request = single_pod_request(solo, nodes, group=SOLO_GROUP, placed=facts, excluded=excluded,
                                     requests=store.requests_of, eligible=eligible, classes=store)  # fmt: skip
    else:
        request = gang_request(members.podgang, pods, nodes, placed=facts, excluded=excluded, only=only,
                               requests=store.requests_of, eligible=eligible, classes=store)  # fmt: skip
    return Translated(
        request,
        demands={key: store.requests_of(pods[key]) for group in request.groups for key in group.pods},
        groups={pod.key: group.name for group in members.groups for pod in group.pods},
        min_replicas={group.name: group.min_replicas for group in members.groups},
    )


def free_capacity(
    *,
    store: ClusterStore,
    reserved: Mapping[str, Mapping[str, int]],
    members: GangMembers | None = None,
    placed: Mapping[str, str] | None = None,
    bound: Mapping[str, str] | None = None,
    coming: Mapping[str, Mapping[str, int]] | None = None,
) -> dict[str, Mapping[str, int]]:
    """What is free per node for the gang: allocatable − bound pods (the store keeps what they leave per node) −
    other gangs' reservations − the gang's own ``placed`` members − members we bound that the store does not show
    bound yet (``bound``), floored at zero (as ``cluster_view.free_capacity``, on the store's parsed vectors:
    parsing every node's quantities on every plan would cost more than the solve). ``coming``: units per node that
    pods already being deleted will free, added before the floor (a preemption may count on them; reservations
    made on them already must not be counted twice). Only nodes with something reserved, placed or coming get a
    vector of their own; every other node shares the store's, so do not modify them."""
    left, kept = store.capacity()
    free = cast(dict[str, Mapping[str, int]], kept)  # a fresh dict of shared vectors; only whole vectors are replaced
    own: dict[str, ResourceVector] = {}
    placed = placed or {}
    bound = bound or {}
    for group in members.groups if members is not None else ():
        for pod in group.pods:
            node = placed.get(pod.key) or (bound.get(pod.key) if not pod.spec.nodeName else None)
            if node:
                _add(own.setdefault(node, {}), store.requests_of(pod))
    coming = coming or {}
    memo = _memo_of(store)
    for name in reserved.keys() | own.keys() | coming.keys():
        vector = left.get(name)
        if vector is None:
            continue  # a node the store no longer has (or not yet): nothing to place on
        plain = name not in own and name not in coming
        if plain:
            # A node's vector and its reservations' total are replaced, never changed, when they change: the same
            # two objects give the same answer. Every plan reads most reserved nodes unchanged since the last.
            held = memo.get(name)
            if held is not None and held[0] is vector and held[1] is reserved[name]:
                free[name] = held[2]
                continue
        units_left = dict(vector)
        for resource, units in coming.get(name, {}).items():
            if resource in units_left:
                units_left[resource] += units
        for source in (reserved, own):
            for resource, units in source.get(name, {}).items():
                if resource in units_left:
                    units_left[resource] = units_left[resource] - units
        free[name] = {resource: max(0, units) for resource, units in units_left.items()}
        if plain:
            memo[name] = (vector, reserved[name], free[name])
    return free


_Memo = dict[str, tuple[Mapping[str, int], Mapping[str, int], Mapping[str, int]]]
_MEMOS: weakref.WeakKeyDictionary[ClusterStore, _Memo] = weakref.WeakKeyDictionary()


def _memo_of(store: ClusterStore) -> _Memo:
    """Per node of ``store``: the last (store vector, reserved total, free vector) ``free_capacity`` worked out for
    a node with nothing of the gang's own or coming on it. Entries hold their inputs, so an input's identity
    cannot be reused while its entry stands; a race between two planners only replaces one consistent entry with
    another."""
    memo = _MEMOS.get(store)
    if memo is None:
        memo = _MEMOS.setdefault(store, {})
    return memo


def _add(vector: ResourceVector, amount: Mapping[str, int]) -> None:
    for name, units in amount.items():
        vector[name] = vector.get(name, 0) + units
