"""The head of the queue: which gangs a batch plans together, in what order they count, and what each weighs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from placement.bounds import Bounds
from placement.problem import Problem
from placement.request import GangRequest
from topology.graph import GPU_RESOURCE

__all__ = ["Queued", "guaranteed_request", "head_of", "weight_of"]


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
