"""What a replay records per gang (``GangRun``) and for the whole run (``ReplayOutcome``); the engine writes them,
the metrics read them."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from api.core import GPU
from benchmarks.replay.preemption import OFF, PreemptionRecord
from benchmarks.replay.workload import ReplayGang
from placement.request import GangRequest


@dataclass(frozen=True)
class Segment:
    """GPU time a gang ran on pods it no longer has: pods evicted while the gang ran on (``lost`` False: their work
    was delivered), or the whole gang evicted (``lost``: it starts again from the beginning). ``bound`` is the
    gang's placement while it ran (whether it honoured its ``required`` packs)."""

    bound: dict[str, str]
    gpu_seconds: float
    lost: bool


@dataclass
class GangRun:
    gang: ReplayGang
    bound: dict[str, str] = field(default_factory=dict)  # pod → node, as placed (kept after completion)
    start: float | None = None  # of the current run (None while waiting, also after an eviction)
    end: float | None = None
    held_gpu_seconds: float = 0.0
    placement_score: float | None = None
    decisions: int = 0
    probe: bool | None = None  # the engine's probe, asked on the free view of the first decision that binds
    first_start: float | None = None
    queued_seconds: float = 0.0  # time waiting in the queue, every wait summed (an evicted gang waits again)
    queued_since: float = field(init=False)
    past: list[Segment] = field(default_factory=list)
    evictions: int = 0  # times evicted whole
    gpus_evicted_for: int = 0  # GPUs evicted to make room for this gang
    generation: int = 0  # bumped by an eviction: a completion queued for an earlier run is stale
    refused_at: int = -1  # the engine's release count at this gang's last fruitless preemption attempt
    _remaining: tuple[int, GangRequest] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.queued_since = self.gang.arrival

    @property
    def bound_gpus(self) -> int:
        demand = self.gang.demand
        return sum(demand[pod].get(GPU, 0) for pod in self.bound)

    def remaining(self) -> GangRequest:
        """The gang's still-unbound pods, each group's ``minReplicas`` lowered by the pods already bound."""
        if self._remaining is not None and self._remaining[0] == len(self.bound):
            return self._remaining[1]  # pods are only added to ``bound`` while the gang waits (or all dropped)
        groups = []
        for group in self.gang.request.groups:
            placed = sum(1 for pod in group.pods if pod in self.bound)
            pods = tuple(pod for pod in group.pods if pod not in self.bound)
            groups.append(replace(group, pods=pods, min_replicas=max(0, group.min_replicas - placed)))
        request = replace(self.gang.request, groups=tuple(groups))
        self._remaining = (len(self.bound), request)
        return request

    def guaranteed_met(self) -> bool:
        return all(
            sum(1 for pod in group.pods if pod in self.bound) >= group.min_replicas
            for group in self.gang.request.groups
        )

    @property
    def running(self) -> bool:
        return self.start is not None and self.end is None


@dataclass
class ReplayOutcome:
    runs: list[GangRun]
    horizon: float
    capacity_gpus: int
    decision_seconds: list[float] = field(default_factory=list)
    running_gpu_seconds: float = 0.0
    held_gpu_seconds: float = 0.0
    background_gpu_seconds: float = 0.0
    idle_gpu_seconds: float = 0.0
    fragmented_gpu_seconds: float = 0.0
    timeline: list[tuple[float, int, int]] = field(default_factory=list)  # (t, running GPUs, held GPUs)
    preemption: str = OFF  # the chooser applied (``--preemption``)
    preemptions: list[PreemptionRecord] = field(default_factory=list)  # every decision both choosers were asked
    broken: set[str] = field(default_factory=set)  # gangs seen running with a group below its minReplicas
