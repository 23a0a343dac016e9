"""What the solver is asked and what it answers. Plain frozen data, no solver imports.

Pods of one group are interchangeable (same template), so a group is described once: its per-pod demand, how
many pods it has, how many are gang-guaranteed, and which nodes may take them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from topology import Topology

__all__ = [
    "FLOOR_MISMATCH",
    "ClusterView",
    "GangRequest",
    "GroupRequest",
    "PackScope",
    "Result",
    "SolveOptions",
    "Status",
    "WorkloadShape",
]


FLOOR_MISMATCH = "floor_mismatch"
"""``Result.objective_parts`` key (``cpsat``): models that found no plan at or above the tier bound they were told
while the greedy held one. The bound is imposed on the model as a floor so it can stop the moment it meets it; a
bound or a model that disagrees with the greedy then reads as infeasible, so the greedy plan is used instead and
this counts the disagreement."""


@dataclass(frozen=True)
class GroupRequest:
    """One PodGroup: ``pods`` are pod keys (``ns/name``); any ``min_replicas`` of them are guaranteed."""

    name: str
    pods: tuple[str, ...]
    demand: Mapping[str, int]
    min_replicas: int
    eligible: frozenset[str] | None = None  # None: every node passes the pod's own predicates


@dataclass(frozen=True)
class PackScope:
    """A pack constraint over some groups. Values are node-label keys: ``required`` — all pods in scope share
    one value of that label; ``preferred`` — they should."""

    groups: tuple[str, ...]
    required: str | None = None
    preferred: str | None = None


@dataclass(frozen=True)
class GangRequest:
    namespace: str
    name: str
    groups: tuple[GroupRequest, ...]
    packs: tuple[PackScope, ...] = ()
    priority: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class WorkloadShape:
    """A gang shape the cluster has been seeing (see :mod:`placement.shapes`): ``gpus`` GPUs in pods of
    ``pod_gpus``, wanted inside one domain of topology level ``level``; ``weight``: how often it came."""

    level: str
    pod_gpus: int
    gpus: int
    weight: int = 1

    @property
    def pods(self) -> int:
        """Pods of ``pod_gpus`` the shape needs in one domain (its smaller pods counted as large ones)."""
        return -(-self.gpus // self.pod_gpus)


@dataclass(frozen=True)
class ClusterView:
    """Free units per node (allocatable − bound pods − other gangs' reservations) over a topology, and the gang
    shapes the cluster has been seeing (``shapes``: the future-fit tier keeps room for them; none, no such tier).

    ``replaced``: the caller's promise that a node's vector in ``free`` is replaced, never changed in place, when
    what is free there changes (the extender's store and reservations keep it). Then what was built from the last
    such view on the same topology is carried over for the nodes whose vector is the same object; without it
    every vector is read anew."""

    topology: Topology
    free: Mapping[str, Mapping[str, int]]
    shapes: tuple[WorkloadShape, ...] = ()
    replaced: bool = False


@dataclass(frozen=True)
class SolveOptions:
    """How to solve. ``model_nodes``: beyond this many candidate nodes the ``cpsat`` model is built on a
    neighbourhood of the greedy plan (building it over every node would not fit the time limit). ``clock``: what
    the time limit is measured with (seconds; tests hand in a fake one to drive the deadline paths)."""

    policy: str = "cpsat"
    time_limit_seconds: float = 1.0  # well under kube-scheduler's extender httpTimeout
    workers: int = 2
    model_nodes: int = 600
    clock: Callable[[], float] = field(default=time.perf_counter, compare=False, repr=False)


class Status(StrEnum):
    PLACED = "Placed"
    INFEASIBLE = "Infeasible"
    TIMED_OUT = "TimedOut"
    INVALID = "Invalid"  # the request itself is malformed; ``reason`` names the field and the rule
    DEFERRED = "Deferred"  # fits, but a batch started other gangs on the capacity it needs (queue-aware planning)


@dataclass(frozen=True)
class Result:
    status: Status
    assignment: Mapping[str, str] = field(default_factory=dict)  # pod key → node
    placement_score: float | None = None
    objective_parts: Mapping[str, float] = field(default_factory=dict)
    bound: float | None = None
    solve_seconds: float = 0.0
    reason: str = ""
