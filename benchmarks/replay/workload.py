"""What a replay runs: the cluster's nodes and the snapshot's gangs with arrival and run time."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property

from api.core import GPU, Pod
from api.grove import PodGang
from placement.request import GangRequest
from topology import HostSpec


@dataclass(frozen=True)
class ReplayGang:
    """One PodGang of the workload; ``arrival`` and ``duration`` in seconds from the replay's start. Its priority is
    ``request.priority``; ``preempts`` is False when that priority's ``preemptionPolicy`` is ``Never`` (the gang goes
    ahead of lower ones in the queue but evicts nothing)."""

    request: GangRequest
    arrival: float
    duration: float
    podgang: PodGang | None = None
    pods: tuple[Pod, ...] = ()
    preempts: bool = True

    @property
    def key(self) -> str:
        return self.request.key

    @property
    def priority(self) -> int:
        return self.request.priority

    @cached_property
    def demand(self) -> dict[str, Mapping[str, int]]:
        """Pod key → its per-pod demand (computed once: the engine asks on every event)."""
        return {pod: group.demand for group in self.request.groups for pod in group.pods}

    @cached_property
    def guaranteed_gpus(self) -> int:
        return sum(group.min_replicas * group.demand.get(GPU, 0) for group in self.request.groups)


@dataclass(frozen=True)
class Workload:
    hosts: tuple[HostSpec, ...]
    gangs: tuple[ReplayGang, ...]  # in arrival order
    background: Mapping[str, tuple[str, Mapping[str, int]]] = field(default_factory=dict)  # bound pod → node, demand
    start: datetime | None = None

    @property
    def allocatable(self) -> dict[str, Mapping[str, int]]:
        return {host.name: host.allocatable for host in self.hosts}
