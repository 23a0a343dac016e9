"""The discrete-event loop.

Time advances from event to event: completions first (they free capacity), then arrivals, then one scheduling
pass. Queue discipline is FIFO with backfill: waiting gangs are tried in arrival order and a gang that does not
fit does not block later ones (no head-of-line reservation, as kube-scheduler's queue behaves). After a
completion every waiting gang is retried; after arrivals only the new ones are, since capacity only shrank for the
others. A cheap necessary check (enough free GPUs on eligible nodes) skips hopeless tries without asking the
policy; it is the same for every policy.

A gang starts once every group has ``minReplicas`` pods bound; best-effort pods still unbound then are dropped.
It runs for its duration and then releases all its pods. Pods bound to a gang that has not started are *held*;
held GPU time of gangs that never start before the horizon is *stranded*.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from api.core import GPU
from benchmarks.replay.decision import BatchDecisionStep, Decision, DecisionStep
from benchmarks.replay.ledger import Ledger
from benchmarks.replay.workload import ReplayGang, Workload
from placement.request import GangRequest

_COMPLETION, _ARRIVAL = 0, 1

Fragmentation = Callable[[Sequence[GangRequest], Mapping[str, Mapping[str, int]]], int]
Probe = Callable[[GangRequest, Mapping[str, Mapping[str, int]]], bool]
Observer = Callable[[float, Ledger], None]


@dataclass
class GangRun:
    gang: ReplayGang
    bound: dict[str, str] = field(default_factory=dict)  # pod → node, as placed (kept after completion)
    start: float | None = None
    end: float | None = None
    held_gpu_seconds: float = 0.0
    placement_score: float | None = None
    decisions: int = 0
    probe: bool | None = None  # the engine's probe, asked on the free view of the first decision that binds
    _remaining: tuple[int, GangRequest] | None = field(default=None, repr=False)

    @property
    def bound_gpus(self) -> int:
        demand = self.gang.demand
        return sum(demand[pod].get(GPU, 0) for pod in self.bound)

    def remaining(self) -> GangRequest:
        """The gang's still-unbound pods, each group's ``minReplicas`` lowered by the pods already bound."""
        if self._remaining is not None and self._remaining[0] == len(self.bound):
            return self._remaining[1]  # pods are only ever added to ``bound`` while the gang waits
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


class _Replay:
    def __init__(
        self,
        *,
        workload: Workload,
        step: DecisionStep | BatchDecisionStep,
        horizon: float,
        fragmentation: Fragmentation | None,
        probe: Probe | None,
    ):
        self.step = step
        self.horizon = horizon
        self.fragmentation = fragmentation
        self.probe = probe
        self.ledger = Ledger(workload.allocatable)
        for pod, (node, demand) in workload.background.items():
            self.ledger.bind(pod=pod, node=node, demand=demand)
        self.background_gpus = self.ledger.used_gpus
        self.runs = [GangRun(gang) for gang in workload.gangs]
        self.outcome = ReplayOutcome(runs=self.runs, horizon=horizon, capacity_gpus=self.ledger.capacity_gpus)
        self.waiting: list[int] = []  # run indices, arrival order
        self.running_gpus = 0
        self.fragmented = 0
        self.now = 0.0
        self._gpu_cache: dict[tuple[frozenset[str] | None, bool], int] = {}
        self.events: list[tuple[float, int, int]] = [
            (gang.arrival, _ARRIVAL, i) for i, gang in enumerate(workload.gangs)
        ]
        heapq.heapify(self.events)

    def advance(self, to: float) -> None:
        """Integrate the GPU states over [now, to)."""
        dt = to - self.now
        if dt <= 0:
            return
        held = sum(self.runs[i].bound_gpus for i in self.waiting)
        for i in self.waiting:
            if self.runs[i].bound:
                self.runs[i].held_gpu_seconds += self.runs[i].bound_gpus * dt
        out = self.outcome
        out.running_gpu_seconds += self.running_gpus * dt
        out.held_gpu_seconds += held * dt
        out.background_gpu_seconds += self.background_gpus * dt
        out.idle_gpu_seconds += (self.ledger.capacity_gpus - self.ledger.used_gpus) * dt
        out.fragmented_gpu_seconds += self.fragmented * dt
        self.now = to

    def complete(self, index: int) -> None:
        run = self.runs[index]
        for pod in run.bound:
            self.ledger.release(pod)
        self._gpu_cache.clear()
        self.running_gpus -= run.bound_gpus
        run.end = self.now
        self.step.completed(run.gang)

    def _may_fit(self, request: GangRequest) -> bool:
        """A necessary condition, the same for every policy: all-or-nothing — each group's guaranteed GPUs are
        free on its eligible nodes; pod by pod — some eligible node has room for one pod of some group."""
        for group in request.groups:
            gpus = group.demand.get(GPU, 0)
            if not group.pods:
                continue
            if gpus == 0:
                if not self.step.all_or_nothing:
                    return True
                continue
            if self.step.all_or_nothing:
                if self._eligible_gpus(group.eligible, largest=False) < group.min_replicas * gpus:
                    return False
            elif self._eligible_gpus(group.eligible, largest=True) >= gpus:
                return True
        return self.step.all_or_nothing

    def _eligible_gpus(self, eligible: frozenset[str] | None, *, largest: bool) -> int:
        """Free GPUs over ``eligible`` nodes (all when None): their sum, or the largest on one node. Cached until
        the next bind or release, since many waiting gangs share their eligibility."""
        key = (eligible, largest)
        cached = self._gpu_cache.get(key)
        if cached is None:
            nodes = self.ledger.allocatable if eligible is None else eligible
            counts = [self.ledger.free_gpus(node) for node in nodes if node in self.ledger.allocatable]
            cached = max(counts, default=0) if largest else sum(counts)
            self._gpu_cache[key] = cached
        return cached

    def try_place(self, index: int) -> None:
        run = self.runs[index]
        remaining = run.remaining()
        if not self._may_fit(remaining):
            return
        step = self.step
        assert isinstance(step, DecisionStep)
        free = self.ledger.free()
        began = time.perf_counter()
        decision = step.decide(run.gang, remaining, free)
        self.outcome.decision_seconds.append(time.perf_counter() - began)
        self._apply(index, decision, free)

    def try_place_batch(self, indices: list[int]) -> None:
        """Batch steps: the gangs that may fit, in arrival order, handed over together; whatever the step did not
        consider (beyond its head of the queue) goes in the next call, until every candidate was considered."""
        step = self.step
        assert isinstance(step, BatchDecisionStep)
        candidates = [i for i in indices if i in self.waiting and self._may_fit(self.runs[i].remaining())]
        while candidates:
            free = self.ledger.free()
            gangs = [(self.runs[i].gang, self.runs[i].remaining()) for i in candidates]
            began = time.perf_counter()
            decisions, considered = step.decide_batch(gangs, free)
            self.outcome.decision_seconds.append(time.perf_counter() - began)
            for i in candidates:
                decision = decisions.get(self.runs[i].gang.key)
                if decision is not None:
                    self._apply(i, decision, free)
            seen = set(considered)
            rest = [i for i in candidates if self.runs[i].gang.key not in seen and i in self.waiting]
            if len(rest) == len(candidates):
                break  # the step considered none of them: asking again would not change anything
            candidates = [i for i in rest if self._may_fit(self.runs[i].remaining())]

    def _apply(self, index: int, decision: Decision, free: Mapping[str, Mapping[str, int]]) -> None:
        """Book a decision's binds (checked by the ledger); the gang starts once every guarantee is met."""
        run = self.runs[index]
        run.decisions += 1
        if decision.bind and not run.bound and self.probe is not None:
            run.probe = self.probe(run.gang.request, free)
        demand = run.gang.demand
        for pod, node in decision.bind.items():
            if pod not in demand or pod in run.bound:
                raise ValueError(f"gang {run.gang.key}: decision binds {pod}, which is not one of its pending pods")
            self.ledger.bind(pod=pod, node=node, demand=demand[pod])
            run.bound[pod] = node
            self._gpu_cache.clear()
        if run.guaranteed_met():
            run.start = self.now
            run.placement_score = decision.placement_score
            self.running_gpus += run.bound_gpus
            self.waiting.remove(index)
            heapq.heappush(self.events, (self.now + run.gang.duration, _COMPLETION, index))

    def run(self, observer: Observer | None, progress: Callable[[float], None] | None) -> ReplayOutcome:
        while self.events and self.events[0][0] <= self.horizon:
            self.advance(self.events[0][0])
            freed, arrived = False, []
            while self.events and self.events[0][0] == self.now:
                _, kind, index = heapq.heappop(self.events)
                if kind == _COMPLETION:
                    self.complete(index)
                    freed = True
                else:
                    self.waiting.append(index)
                    self.step.arrived(self.runs[index].gang)
                    arrived.append(index)
            tried = list(self.waiting) if freed else arrived
            if isinstance(self.step, BatchDecisionStep):
                self.try_place_batch(tried)
            else:
                for index in tried:
                    if index in self.waiting:
                        self.try_place(index)
            self.ledger.check()
            if self.fragmentation is not None:
                pending = [self.runs[i].remaining() for i in self.waiting]
                self.fragmented = self.fragmentation(pending, self.ledger.free()) if pending else 0
            held = sum(self.runs[i].bound_gpus for i in self.waiting)
            self.outcome.timeline.append((self.now, self.running_gpus, held))
            if observer is not None:
                observer(self.now, self.ledger)
            if progress is not None:
                progress(self.now)
        self.advance(self.horizon)
        return self.outcome


def replay(
    workload: Workload,
    step: DecisionStep | BatchDecisionStep,
    *,
    horizon: float | None = None,
    fragmentation: Fragmentation | None = None,
    probe: Probe | None = None,
    observer: Observer | None = None,
    progress: Callable[[float], None] | None = None,
) -> ReplayOutcome:
    """Run ``workload`` through ``step`` until ``horizon`` seconds (default: the last arrival, so the cluster is
    contended for the whole measured window)."""
    if horizon is None:
        horizon = max((gang.arrival for gang in workload.gangs), default=0.0)
    state = _Replay(workload=workload, step=step, horizon=horizon, fragmentation=fragmentation, probe=probe)
    return state.run(observer, progress)
