"""The head of the queue: which gangs a batch plans together, in what order they count, what each weighs, and
each resolved as ``placement.solve`` resolves a gang."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from placement.arrays import HostArrays
from placement.bounds import Bounds, gang_bounds
from placement.explain import explain_infeasible, relaxation_reason
from placement.problem import InvalidRequest, Problem, check_request, prepare
from placement.prune import prune
from placement.request import ClusterView, GangRequest, Result, SolveOptions, Status
from topology.graph import GPU_RESOURCE

__all__ = ["Head", "Queued", "guaranteed_request", "head_of", "resolve_head", "weight_of"]


@dataclass(frozen=True)
class Queued:
    """One gang of the head. ``position``: its index in the queue the caller gave (older first); ``rank``: its
    place in the head (priority, then age); ``weight``: its guaranteed GPUs (1 for a gang that asks for none),
    what the waiting tiers count; ``problem``: its guaranteed pods resolved on the batch's view, pruned, with its
    tier ``bounds`` there; ``near``: the nodes the batch may use for it (``None``: all its candidates)."""

    position: int
    rank: int
    request: GangRequest
    problem: Problem
    bounds: Bounds
    weight: int
    near: frozenset[str] | None = None


def head_of(requests: Sequence[GangRequest], size: int) -> list[int]:
    """Queue positions of the first ``size`` requests by priority (highest first), then position (older first)."""
    return sorted(range(len(requests)), key=lambda i: (-requests[i].priority, i))[: max(0, size)]


def guaranteed_request(request: GangRequest) -> GangRequest:
    """The request cut down to each group's ``minReplicas`` pods: what a batch decides; extras come after."""
    return replace(request, groups=tuple(replace(g, pods=g.pods[: g.min_replicas]) for g in request.groups))


def weight_of(request: GangRequest) -> int:
    return max(1, sum(g.min_replicas * g.demand.get(GPU_RESOURCE, 0) for g in request.groups))


@dataclass(frozen=True)
class Head:
    """The head of a queue resolved on a view: ``keys`` in head order; ``gangs``, those that can be planned, in
    head order; ``refused``: gang key → why each other one cannot (invalid, or infeasible even alone); ``hosts``:
    the view's host arrays, shared by every gang's problem."""

    keys: tuple[str, ...]
    hosts: HostArrays
    gangs: list[Queued]
    refused: dict[str, Result]


def resolve_head(requests: Sequence[GangRequest], view: ClusterView, options: SolveOptions, *, size: int) -> Head:
    """The first ``size`` of ``requests`` by priority, then age, each resolved as ``solve`` resolves it: its
    guaranteed pods, pruned, with coarse bounds."""
    positions = head_of(requests, size)
    resources = sorted({r for i in positions for g in requests[i].groups for r, u in g.demand.items() if u > 0})
    hosts = HostArrays(view, resources)
    refused: dict[str, Result] = {}
    gangs: list[Queued] = []
    for position in positions:
        request = requests[position]
        try:
            check_request(request)
            whole = prepare(guaranteed_request(request), view, options, hosts=hosts)
        except InvalidRequest as error:
            refused[request.key] = Result(Status.INVALID, reason=str(error))
            continue
        reason = relaxation_reason(whole)
        pruned = prune(whole) if reason is None else whole
        # Coarse bounds (no exact best-fit refinement, which a batch cannot pay for every gang): a placementScore
        # measured against them can only come out lower, never inflated.
        bounds = gang_bounds(pruned, exact_fit=False) if reason is None else None
        if bounds is None:
            refused[request.key] = Result(Status.INFEASIBLE, reason=reason or explain_infeasible(whole))
            continue
        gangs.append(Queued(position, len(gangs), request, pruned, bounds, weight_of(request)))
    return Head(tuple(requests[i].key for i in positions), hosts, gangs, refused)
