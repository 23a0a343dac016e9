"""What one phase of ``bench_e2e --real`` runs and what it measured: the queue (uniform gangs or users' mix) and the
figures of a phase, shared by the run (``real``) and its report (``real_report``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from benchmarks.controlplane.rest import Api
from benchmarks.controlplane.workload import Gang, create_gangs
from benchmarks.e2e.counters import Counters
from benchmarks.e2e.mix import Mix

__all__ = ["NAMESPACE", "PROFILE_SECONDS", "QPS", "Phase", "Queue", "Uniform"]

NAMESPACE = "bench"
QPS = {"clientConnection": {"qps": 500, "burst": 500}}  # kube-scheduler's in every phase: not what is measured

PROFILE_SECONDS = 15.0
"""kube-scheduler's CPU profile covers this much of the drive's start (both phases last longer)."""


@dataclass
class Uniform:
    """The uniform queue: gangs of one group, alike."""

    gangs: list[Gang]

    @property
    def size(self) -> int:
        return sum(g.size for g in self.gangs)

    def guaranteed(self) -> dict[str, list[tuple[set[str], int]]]:
        return {g.name: [(set(g.pod_names()), g.size)] for g in self.gangs}

    def create_queue(self, api: Api, namespace: str, *, scheduler: str, podgangs: bool = True) -> None:
        create_gangs(api, namespace, [replace(g, scheduler=scheduler) for g in self.gangs], podgangs=podgangs)


Queue = Uniform | Mix


@dataclass
class Phase:
    mode: str
    bound: int = 0
    total: int = 0
    whole: int = 0  # gangs whose guaranteed pods were all bound
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # process → CPU seconds over the drive
    api_counters: Counters = field(default_factory=dict)  # per bound pod
    extender_counters: Counters = field(default_factory=dict)  # per bound pod
    by_thread: dict[str, float] = field(default_factory=dict)  # extender CPU seconds by thread
    scheduler_activity: dict[str, float] = field(default_factory=dict)  # share of kube-scheduler's profiled CPU
    extender_idle: float = 0.0  # CPU seconds per second, planned and waiting
    extender_io: tuple[int, int] = (0, 0)  # read and write system calls over the drive
    writes_by_thread: dict[str, float] = field(default_factory=dict)  # the writes, by thread name
    perf: str = ""  # with --perf: the extender's busiest threads over the drive, by shared object (perf's samples)
    planning_seconds: float = 0.0  # planned ahead and nominated, before kube-scheduler starts
    startup_cpu: float = 0.0  # the extender's CPU seconds from its start until ready, before the queue exists
    planning_cpu: float = 0.0  # its CPU seconds from the queue's first create until planned and nominated
    planning_by_thread: dict[str, float] = field(default_factory=dict)  # the same, by thread name
    planning_counters: Counters = field(default_factory=dict)  # the extender's counters then (totals)
    final_counters: Counters = field(default_factory=dict)  # the extender's counters at the phase's end (totals)

    @property
    def pods_per_second(self) -> float:
        return self.bound / self.seconds if self.seconds else 0.0
